#!/bin/bash
# The editor under Xvfb with Mara's day-one library: a pause after "Kind regards" (no comma yet) gets the
# comma, then her name on the next line, not "Kind regards Mara Lindqvist," on one line (Decoder.mark_first);
# Tab takes both.
source "$(dirname "$0")/xvfb_common.sh"
editor_with 96 xvfb-sign-off-comma mara
xdotool type --delay 50 "Hi Sam,"
xdotool key Return Return
xdotool type --delay 50 "Thanks for sorting out the keys."
xdotool key Return Return
xdotool type --delay 50 "Kind regards"
sleep 6
import -window root docs/img/sign-off-comma-xvfb.png
xdotool key Tab                   # taken whole: "Kind regards," and the name below it
sleep 2
import -window root docs/img/sign-off-comma-xvfb-taken.png
xvfb_stop
