#!/bin/sh
# Runs dsrun --verify on every plan in a directory and prints one line per
# plan: PASS or FAIL, the step time and the memory comparison. Exits 1
# unless every plan passed.
#
#   runtime/run-matrix.sh DSRUN PLANDIR PROCESSES LOGDIR [STEPS] [PATTERN]
#
# NVMe plans keep their swap files in DSRUN_NVME_PATH (/tmp/dsrun-nvme).
set -u
dsrun=$1 dir=$2 n=$3 logs=$4 steps=${5:-2} pattern=${6:-*}
nvme=${DSRUN_NVME_PATH:-/tmp/dsrun-nvme}
mkdir -p "$nvme"
mkdir -p "$logs"
pass=0 fail=0
for plan in "$dir"/$pattern.bin; do
  name=$(basename "$plan" .bin)
  log="$logs/$name.log"
  if timeout 300 "$dsrun" -n "$n" "$plan" --steps "$steps" --verify \
       --timeout 120 --nvme-path "$nvme" --json "$logs/$name.json" \
       > "$log" 2>&1; then
    pass=$((pass + 1)); verdict=PASS
  else
    fail=$((fail + 1)); verdict=FAIL
  fi
  step=$(grep -o "step $steps: [0-9.]* ms" "$log" | head -1)
  mem=$(grep -o 'measured [0-9.]* MiB, planned [0-9.]* MiB ([-+0-9.]*%)' "$log" | head -1)
  echo "$verdict $name: $step; $mem"
  nvme_io=$(grep -o 'NVMe read [0-9.]* MiB at [0-9.]* GB/s, written [0-9.]* MiB at [0-9.]* GB/s' "$log" | tail -1)
  [ -n "$nvme_io" ] && echo "    $nvme_io"
  [ "$verdict" = FAIL ] && grep -m3 -E 'verify|error|fail|dsrun:' "$log" | sed 's/^/    /'
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
