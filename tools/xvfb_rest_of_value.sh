#!/bin/bash
# The editor under Xvfb with Teo's day-one library (bench/data/personas): after "Call me on +44 7700",
# typed by hand, the rest of his number comes as one highlighted chunk (Decoder.rest_of_value).
source "$(dirname "$0")/xvfb_common.sh"
editor_with 94 xvfb-rest teo
xdotool type --delay 50 "Hey Nina,"
xdotool key Return Return
xdotool type --delay 50 "Happy to talk it through. Call me on +44 7700"
sleep 6
import -window root docs/img/rest-of-value-xvfb.png
xvfb_stop
