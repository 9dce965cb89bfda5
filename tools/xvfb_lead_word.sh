#!/bin/bash
# The editor under Xvfb with Teo's day-one library (bench/data/personas): after "you can reach me by
# email" the model's own " at" comes first and then his address, highlighted
# (Decoder.value_after_lead_word); before, the suggestion was " at" and nothing.
source "$(dirname "$0")/xvfb_common.sh"
editor_with 95 xvfb-lead teo
xdotool type --delay 50 "Hey Nina,"
xdotool key Return Return
xdotool type --delay 50 "If anything breaks this weekend, you can reach me by email"
sleep 6
import -window root docs/img/lead-word-xvfb.png
xvfb_stop
