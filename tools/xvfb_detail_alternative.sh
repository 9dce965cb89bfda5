#!/bin/bash
# The editor under Xvfb with the paper's profile: after "My side projects are" the suggestion is the
# model's own, and the status bar names the detail one Alt+] away ("1/3 · Alt+] github"); Alt+] shows
# it, highlighted (docs/img/detail-alternative-{first,shown}-xvfb.png).
source "$(dirname "$0")/xvfb_common.sh"
xvfb_start 94
export HOME=$T PYTHON_KEYRING_BACKEND=keyring.backends.fail.Keyring CHUNKWISE_PASSPHRASE=xvfb-session-only
seed_paper_profile
app_start 40
window_focus
xdotool type --delay 50 "Hi Sam,"
xdotool key Return Return
xdotool type --delay 50 "My side projects are"
sleep 10
import -window root docs/img/detail-alternative-first-xvfb.png
xdotool key alt+bracketright
sleep 1
import -window root docs/img/detail-alternative-shown-xvfb.png
xvfb_stop
