#!/bin/bash
# The editor under Xvfb: a library with a passport and a gym membership number (kinds of number the slot
# classifier was never trained on) beside a VAT number.  "My tax number is" gets none of them (the gym number
# read highest there and went in before); "The airline also needs my passport number:" gets the passport,
# highlighted.  Two screens: docs/img/own-kind-tax-xvfb.png, docs/img/own-kind-passport-xvfb.png.
source "$(dirname "$0")/xvfb_common.sh"
editor_with 95 xvfb-own-kind entries <<'X'
name|Ines Vallejo|My name is; Name:
email|ines@vallejo-studio.es|My email is; Email me at
VAT number|ESB12345674|My VAT number is; VAT:
passport|PAB482913|My passport number is; Passport no.:
gym membership|GX-2291-0457|My gym membership number is; Gym card:
X
xdotool type --delay 50 "Hi Marta,"
xdotool key Return Return
xdotool type --delay 50 "Happy to fill in the booking form. My tax number is"
sleep 6
import -window root docs/img/own-kind-tax-xvfb.png
xdotool key Escape
xdotool type --delay 50 " on the invoice."
xdotool key Return Return
xdotool type --delay 50 "The airline also needs my passport number:"
sleep 6
import -window root docs/img/own-kind-passport-xvfb.png
xvfb_stop
