#!/bin/bash
# The editor under Xvfb with Teo's day-one library (bench/data/personas): after "...sends new subscribers a"
# (a place that got his email before the prose gates) no value of his is offered; after "Email me at" his
# email is.  Other places of the same sentence still get it (bench/out/prose-dev.txt).
source "$(dirname "$0")/xvfb_common.sh"
editor_with 96 xvfb-prose teo
xdotool type --delay 50 "Hey Nina,"
xdotool key Return Return
xdotool type --delay 50 "The newsletter form is live. It now connects to your mailing list and sends new subscribers a"
sleep 6
import -window root docs/img/prose-xvfb-mid-sentence.png
xdotool type --delay 50 " welcome email. Any questions? Email me at"
sleep 6
import -window root docs/img/prose-xvfb-email.png
xvfb_stop
