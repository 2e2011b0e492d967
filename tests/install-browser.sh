#!/usr/bin/env bash
# Install Debian's chromium for the browser tests when it is missing and we may (root with apt-get).
# Never fails: without a browser the browser tests skip and say why (with CI=true they fail).
if command -v chromium >/dev/null; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  echo "chromium is missing and cannot be installed here: the browser tests will skip"
  exit 0
fi
# Without chromium's recommended packages (printing, sound, desktop services: about 100 packages
# and half the install's time) but with the fonts it recommends, which the pages are laid out in.
{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-liberation; } \
  || echo "chromium could not be installed: the browser tests will skip"
exit 0
