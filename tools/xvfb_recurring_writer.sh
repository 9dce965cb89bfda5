#!/bin/bash
# The editor under Xvfb for a writer of recurring emails (bench/data/personas/rhea): her day-one library,
# her 16 sent emails learned from Tools -> Learn from my writing…, then a new email typed as she would.
# Shows (docs/img/recurring-writer-*-xvfb.png): a phrase of her viewing emails offered whole, highlighted,
# after the offer sentence (a wrong guess there: she writes on with the rent); then her sign-off after the
# blank line she always leaves, name at the line's start and her signature block below it (Decoder.propose
# with writing_backs; before, "Kind regards,\nRhea Castellano"), taken with Tab.
source "$(dirname "$0")/xvfb_common.sh"
editor_with 94 xvfb-recurring rhea
MAIL=$T/sent
mkdir -p "$MAIL"
cp bench/data/personas/rhea/sent-*.txt "$MAIL"/
learn_menu_open
learn_menu_choose "$MAIL"
sleep 90                                        # learning 16 emails on two cores
window_focus
xdotool type --delay 40 "Hi Ms Patel,"
xdotool key Return Return
xdotool type --delay 40 "Good news - the landlord has accepted your offer on 12 Grove Lane, Chorlton"
sleep 6
import -window root docs/img/recurring-writer-phrase-xvfb.png
xdotool key Escape
xdotool type --delay 40 " at £1,150 pcm."
xdotool key Return Return
xdotool type --delay 40 "Any questions in the meantime, just let me know."
xdotool key Return Return
xdotool type --delay 40 "Kind regards,"
sleep 6
import -window root docs/img/recurring-writer-signoff-xvfb.png
xdotool key Tab
sleep 2
import -window root docs/img/recurring-writer-signoff-taken-xvfb.png
xvfb_stop
