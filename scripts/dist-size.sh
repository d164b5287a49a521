#!/usr/bin/env bash
# dist-size.sh [DIR]: how big the folder make dist made is, as it lies and
# as `tar -cJ` packs it to carry to a GPU machine. The README quotes these
# figures; `make dist-size` runs this after make dist.
set -euo pipefail
dir=${1:-dist}
[ -d "$dir" ] || { echo "dist-size: no $dir/ (run make dist first)" >&2; exit 1; }
bytes=$(du -sb "$dir" | cut -f1)
packed=$(tar -cJf - "$dir" | wc -c)
awk -v b="$bytes" -v p="$packed" -v d="$dir" 'BEGIN { printf "%s/: %.1f MB (%.1f MiB); tar -cJ: %.1f MB (%.1f MiB)\n", d, b/1e6, b/1048576, p/1e6, p/1048576 }'
