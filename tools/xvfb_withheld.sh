#!/bin/bash
# The editor under Xvfb with an empty library: after "...please ring me directly at" the model would make up a
# phone number, so the suggestion stops before it and the status bar says why (Stats.withheld).
source "$(dirname "$0")/xvfb_common.sh"
editor_with 95 xvfb-withheld
xdotool type --delay 50 "Hi Sam,"
xdotool key Return Return
xdotool type --delay 50 "If anything comes up during the interview, please ring me directly at"
sleep 8
import -window root docs/img/withheld-xvfb.png
xvfb_stop
