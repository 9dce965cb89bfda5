#!/bin/bash
# The editor under Xvfb with Mara's day-one library: "Thanks" mid-line gets no name of hers (the reader is
# thanked); after Enter, the sign-off's next line gets her name (whose.addresses_reader).
source "$(dirname "$0")/xvfb_common.sh"
editor_with 95 xvfb-signoff mara
xdotool type --delay 50 "Hi Sam,"
xdotool key Return Return
xdotool type --delay 50 "The boiler is fixed. Thanks"
sleep 6
import -window root docs/img/signoff-xvfb-thanks.png
xdotool key Escape
xdotool key Return
sleep 6
import -window root docs/img/signoff-xvfb-enter.png
xvfb_stop
