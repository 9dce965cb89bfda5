#!/bin/bash
# Drive the real editor under Xvfb with a locked library: decline the passphrase at start, get
# suggestions from the model alone, then unlock from the Tools menu without a restart.
set -x
source "$(dirname "$0")/xvfb_common.sh"
xvfb_start 98
export PYTHON_KEYRING_BACKEND=keyring.backends.fail.Keyring      # a session with no keychain
CHUNKWISE_PASSPHRASE=xvfb-session-only seed_entries <<'ENTRIES'
phone|+44 20 7946 0321|My phone number is; You can call me on
ENTRIES
app_start 6
import -window root docs/img/locked-ask-xvfb.png
xdotool key Escape            # decline the passphrase
sleep 2
xdotool key Return            # the note: the library stays locked
sleep 25
window_focus
xdotool type --delay 60 "Hi Oskar,"
xdotool key Return Return
xdotool type --delay 60 "Thanks for the update. If anything comes up, you can call me on"
sleep 5
import -window root docs/img/locked-xvfb.png
xdotool key ctrl+l
sleep 2
import -window root docs/img/locked-library-xvfb.png
xdotool key Escape
sleep 1
xdotool windowactivate --sync $WID; xdotool windowfocus $WID
xdotool mousemove 140 9 click 1     # the Tools menu
sleep 1
import -window root docs/img/locked-menu-xvfb.png
xdotool key u
sleep 2
xdotool type --delay 40 "xvfb-session-only"
xdotool key Return
sleep 20
xdotool key BackSpace
xdotool type --delay 60 "n"
sleep 5
import -window root docs/img/unlocked-xvfb.png
xvfb_stop
