#!/bin/bash
# The Library window under Xvfb, opened with Ctrl+L as a user does: its Comes column says where each
# entry is inserted.  A phone wherever a phone is asked for; a passport number (a kind the slot classifier
# does not know) where the user's words name it; two numbers stored under "ID:" and "My ID is", which no
# word tells apart, nowhere yet, with what to add; a snippet where its contexts match.
# One screen: docs/img/library-comes-xvfb.png.
source "$(dirname "$0")/xvfb_common.sh"
editor_with 94 xvfb-library-comes entries <<'X'
phone|+44 7700 900123|Call me on; My phone number is
passport|PAB482913|My passport number is; Passport no.:
|GX-2291-0457|ID:
|K-88-301|My ID is
dietary|I'm vegetarian (fish is fine) and allergic to walnuts.|Dietary requirements:; About food:|snippet
X
xdotool key ctrl+l
sleep 4
import -window root docs/img/library-comes-xvfb.png
xvfb_stop
