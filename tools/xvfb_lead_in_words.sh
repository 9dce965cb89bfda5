#!/bin/bash
# The editor under Xvfb: "Call me:" reads the phone and the availability snippet nearly alike; the user's
# own lead-in for the phone ("Call me at") names it, so the phone comes, highlighted.
source "$(dirname "$0")/xvfb_common.sh"
editor_with 96 xvfb-lead-in-words entries <<'X'
phone|(415) 555-0188|Phone:; Call me at
email|jo.reyes@harborline.org|Email:; Email me at
availability|Around Mon–Thu, 9am–1pm Pacific.|My hours; When I'm available|snippet
address|77 Pier Lane, Oakland, CA 94607|My address is; Mailing address
X
xdotool type --delay 50 "Hi Sam,"
xdotool key Return Return
xdotool type --delay 50 "Thanks for the quick reply. Easier to talk it through."
xdotool key Return Return
xdotool type --delay 50 "Call me:"
sleep 6
import -window root docs/img/lead-in-words-xvfb.png
xvfb_stop
