#!/bin/bash
# The editor under Xvfb with the paper's profile: after "You can reach me at" the slot classifier reads
# the phone and the email nearly alike, so neither goes in (matching.RIVAL_OVER): the suggestion is the
# model's own, and the status bar names the phone one Alt+] away, where the detail alternative's lower
# threshold lets the nearer winner through; Alt+] shows it, highlighted
# (docs/img/rival-fields-{first,alt}-xvfb.png).
source "$(dirname "$0")/xvfb_common.sh"
editor_with 95 xvfb-session-only paper
xdotool type --delay 50 "Hi Sam,"
xdotool key Return Return
xdotool type --delay 50 "You can reach me at"
sleep 10
import -window root docs/img/rival-fields-first-xvfb.png
xdotool key alt+bracketright
sleep 1
import -window root docs/img/rival-fields-alt-xvfb.png
xvfb_stop
