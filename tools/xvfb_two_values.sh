#!/bin/bash
# The editor under Xvfb with a library that holds a work and a personal email: after "For anything
# private, my personal email is" the personal one comes, highlighted (ChunkMatcher.which_of), and the
# status bar names the work email one Alt+] away; Alt+] shows it (docs/img/two-values-xvfb.png,
# docs/img/two-values-alt-xvfb.png).
source "$(dirname "$0")/xvfb_common.sh"
xvfb_start 96
export HOME=$T PYTHON_KEYRING_BACKEND=keyring.backends.fail.Keyring CHUNKWISE_PASSPHRASE=xvfb-session-only
seed_entries <<'ENTRIES'
work email|ana.marin@northwind.com|My work email is; At the office, email me at
personal email|ana.m.1988@gmail.com|My personal email is; For private things, email me at
ENTRIES
app_start 40
window_focus
xdotool type --delay 50 "Hi Tom,"
xdotool key Return Return
xdotool type --delay 50 "For anything private, my personal email is"
sleep 12
import -window root docs/img/two-values-xvfb.png
xdotool key alt+bracketright
sleep 1
import -window root docs/img/two-values-alt-xvfb.png
xvfb_stop
