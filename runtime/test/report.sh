# Sourced by the GPU checks that print one line per check (POSIX sh).

# checked LABEL FILE COMMAND...: runs COMMAND with its output in FILE and
# prints each line as "passed: LABEL: ..." or, when it fails, the last six
# as "FAILED: LABEL: ..." and sets failed=1.
checked() {
  checked_label=$1 checked_file=$2
  shift 2
  if "$@" > "$checked_file" 2>&1; then
    sed "s/^/passed: $checked_label: /" "$checked_file"
  else
    sed "s/^/FAILED: $checked_label: /" "$checked_file" | tail -6
    failed=1
  fi
}

# micro_batch CONFIG.json: its train_micro_batch_size_per_gpu.
micro_batch() {
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['train_micro_batch_size_per_gpu'])" "$1"
}
