#!/bin/bash
# The editor under Xvfb with Teo's day-one library (bench/data/personas): after "...It now connects to" his
# email is offered; he types on over it, and at the next pause of the same sentence it is not offered again
# (core/feedback.py PassedOver; the dev typing run had it at five pauses in a row there): the model's " will".
source "$(dirname "$0")/xvfb_common.sh"
editor_with 97 xvfb-typed-over teo
xdotool type --delay 50 "Hey Nina,"
xdotool key Return Return
xdotool type --delay 50 "The newsletter signup for Kiln Studio is live. It now connects to"
sleep 6
import -window root docs/img/typed-over-xvfb-offered.png
xdotool type --delay 50 " your mailing list and"
sleep 6
import -window root docs/img/typed-over-xvfb-next-pause.png
xvfb_stop
