#!/bin/sh
# herdr installer — placeholder.
#
# Release artifacts, the release manifest and checksum-verified installs arrive with the
# release/update work. Until then, build from source:
#
#     cargo install --path . --locked
#
echo "install.sh: no published releases yet; build from source with: cargo install --path . --locked" >&2
exit 1
