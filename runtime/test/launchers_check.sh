#!/bin/sh
# The same training started by each launcher dsrun joins (ctest -L gpu:
# gpu-launchers): dsrun -n RANKS, torchrun --no-python (whose agent
# already serves a TCPStore at MASTER_PORT; dsrun joins it as a client)
# and, where the machine has it, Open MPI's mpirun. Each run's losses must
# equal dsrun -n's bit for bit (--deterministic). Prints one line per
# launcher; exits 1 when one fails.
#
#   runtime/test/launchers_check.sh DSRUN PLAN.bin INIT TOKENS OUTDIR RANKS STEPS
set -u
dsrun=$(realpath "$1") plan=$2 init=$3 tokens=$4 out=$5 n=$6 steps=$7
here=$(dirname "$0")
rm -rf "$out"; mkdir -p "$out"
args="$plan --data $tokens --init $init --deterministic --steps $steps"
failed=0
run() { # NAME COMMAND...: trains, then compares with dsrun -n's losses
  name=$1; shift
  timeout 300 "$@" $args --json "$out/$name.json" > "$out/$name.log" 2>&1
  status=$?
  if [ "$name" = dsrun-n ]; then
    [ $status = 0 ] && echo "passed: dsrun -n $n trained $steps steps" ||
      { echo "FAILED: dsrun -n $n exited $status"; tail -3 "$out/$name.log"; failed=1; }
    return
  fi
  if [ $status = 0 ] && python3 "$here/../bench/resumed_losses.py" \
       "$out/dsrun-n.json" "$out/$name.json" 0 > "$out/$name.compare"; then
    echo "passed: $name: $(cat "$out/$name.compare")"
  else
    echo "FAILED: $name exited $status: $(cat "$out/$name.compare" 2>/dev/null)"
    tail -5 "$out/$name.log"
    failed=1
  fi
}
export NCCL_NVLS_ENABLE=0
run dsrun-n "$dsrun" -n "$n"
if command -v torchrun > /dev/null; then
  run torchrun torchrun --no-python --nproc_per_node "$n" \
    --master_port $((29500 + $$ % 1000)) "$dsrun"
else
  # The test is for torchrun above all: its absence is a failure.
  echo "FAILED: torchrun is not on this machine (PyTorch's launcher)"
  failed=1
fi
if command -v mpirun > /dev/null; then
  # dsrun built without MPI meets at MASTER_ADDR:MASTER_PORT instead.
  run mpirun mpirun --allow-run-as-root -np "$n" -x NCCL_NVLS_ENABLE \
    -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=$((30500 + $$ % 1000)) "$dsrun"
else
  echo "skipped: mpirun (not on this machine)"
fi
exit $failed
