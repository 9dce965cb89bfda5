#!/bin/bash
# The editor under Xvfb with the paper's profile: a draft whose first line is the bare label "Phone:"
# gets the user's phone number (before the classifier learned first lines it read ordinary text there).
source "$(dirname "$0")/xvfb_common.sh"
editor_with 96 xvfb-first-line paper
xdotool type --delay 50 "Phone:"
sleep 6
import -window root docs/img/first-line-xvfb.png
xvfb_stop
