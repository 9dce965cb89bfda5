#!/bin/bash
# The editor under Xvfb with a library holding the user's home address: a terse label of the writer's
# own ("Hi,\n\nShip to:") gets it.  The probe before " — that's" read that label -2.25, under its bar
# of -2.0, so nothing came (docs/img/writer-probe-before-xvfb.png, taken with core/whose.py of
# 83bd097); the new probe reads it -0.66 (python bench/probes.py --quoted).
#   bash tools/xvfb_writer_probe.sh [NAME]     # the screenshot's name, writer-probe by default
source "$(dirname "$0")/xvfb_common.sh"
editor_with 96 xvfb-writer-probe entries <<'LIB'
home address|12 Rue des Lilas, 69003 Lyon, France|My home address is; Please send it to my flat at; I live at
email|claire.dubois@posteo.fr|My email is; You can email me at; Write to me at
LIB
xdotool type --delay 50 "Hi,"
xdotool key Return Return
xdotool type --delay 50 "Ship to:"
sleep 6
import -window root "docs/img/${1:-writer-probe}-xvfb.png"
xvfb_stop
