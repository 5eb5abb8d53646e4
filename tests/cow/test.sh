#!/usr/bin/env bash
# Checkpoints on a copy-on-write file system: makes an XFS with reflink on a sparse image file, loop-mounts
# it, and runs there the ignored tests of tests/tests/core_checkpoint_clones.rs (STEPWISE_COW_DIR names the
# mount; without it they fail) and the store's unit tests (TMPDIR on it, so they take the clone branch).
# The mount and the image are removed at the end, failed or not.
#   tests/cow/test.sh
# Needs root or sudo (mount). Installs Debian's xfsprogs with apt-get when mkfs.xfs is missing.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

if ! command -v mkfs.xfs > /dev/null 2>&1 && [ ! -x /usr/sbin/mkfs.xfs ] && [ ! -x /sbin/mkfs.xfs ]; then
  echo "-- installing xfsprogs (apt-get)"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq xfsprogs > /dev/null
fi
export PATH="$PATH:/usr/sbin:/sbin"

work="$(mktemp -d "${TMPDIR:-/tmp}/stepwise-cow.XXXXXX")"
img="$work/xfs.img"
mnt="$work/mnt"
mounted=0
cleanup() {
  if [ "$mounted" = 1 ]; then as_root umount "$mnt" || as_root umount -l "$mnt" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# Sparse: XFS wants 300 MB at least; the tests write about 40 MB.
truncate -s 512M "$img"
mkfs.xfs -q -m reflink=1 "$img"
mkdir -p "$mnt"
as_root mount -o loop "$img" "$mnt"
mounted=1
as_root chown "$(id -u):$(id -g)" "$mnt"
echo "-- XFS (reflink) mounted at $mnt"

STEPWISE_COW_DIR="$mnt" cargo test -p stepwise-tests --test core_checkpoint_clones -- --ignored
TMPDIR="$mnt" cargo test -p stepwise --lib -- checkpoint::store checkpoint::clone
