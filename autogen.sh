#!/bin/sh
# Regenerate the build system from configure.ac and Makefile.am.
set -e
cd "$(dirname "$0")"
autoreconf -fi
# The TAP test driver ships with automake but is not installed by autoreconf.
drv=$(ls /usr/share/automake-*/tap-driver.sh 2>/dev/null | tail -n 1)
[ -n "$drv" ] || { echo "autogen.sh: automake's tap-driver.sh not found" >&2; exit 1; }
cp -f "$drv" build-aux/tap-driver.sh
