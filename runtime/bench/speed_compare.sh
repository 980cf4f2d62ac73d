#!/bin/sh
# dsrun's training speed beside PyTorch's, in one run on one machine.
#
#   runtime/bench/speed_compare.sh DSRUN PLANDIR MODELDIR TOKENS OUTDIR \
#       PROCESSES NAME MICRO SEQ VARIANT...
#
# Trains PLANDIR/NAME-speed-VARIANT.bin (utils/speed-plans.sh) with dsrun
# on PROCESSES GPUs for 12 steps from MODELDIR/NAME's weights, then the
# same model with runtime/bench/torch_train_speed.py at MICRO x SEQ per
# GPU: eager and torch.compile in one process, or DDP eager, FSDP2 eager
# and FSDP2 compiled on several. Prints one table: tokens/s per GPU, ms
# per step, MFU counted the same way for every row (6 x parameters plus
# attention per token, speed_table.py) and peak device memory.
#
# A VARIANT ending in +graph runs that plan with --graph on (its lean
# steps as one CUDA graph). PEERS, comma-separated, picks the peers on
# several GPUs (default "ddp,fsdp2,fsdp2 --compile"; "ddp --compile" is
# compiled DDP).
set -u
dsrun=$1 plans=$2 models=$3 tokens=$4 out=$5 n=$6 name=$7 micro=$8 seq=$9
shift 9
here=$(dirname "$0")
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
for v in "$@"; do
  rm -f "$out/$name-$v-w$n.json"
  graph=off
  case $v in *+graph) graph=on ;; esac
  timeout 300 "$dsrun" -n "$n" "$plans/$name-speed-${v%+graph}.bin" --data "$tokens" \
    --init "$models/$name/model.safetensors" --steps 12 --graph $graph \
    --json "$out/$name-$v-w$n.json" > "$out/$name-$v-w$n.log" 2>&1 ||
    { echo "dsrun $v failed:"; grep -m3 -E "error|failed" "$out/$name-$v-w$n.log"; }
done
peers=$out/$name-w$n-peers.jsonl
rm -f "$peers"
speed="$here/torch_train_speed.py --model $models/$name --micro $micro --seq $seq --json $peers"
if [ "$n" = 1 ]; then
  for c in "" --compile; do
    timeout 300 python3 $speed $c > "$out/peer.log" 2>&1 ||
      { echo "pytorch $c failed:"; tail -3 "$out/peer.log"; }
  done
else
  IFS=,
  for p in ${PEERS:-ddp,fsdp2,fsdp2 --compile}; do
    IFS=' '
    timeout 400 python3 -m torch.distributed.run --standalone \
      --nproc-per-node "$n" $speed --parallel $p > "$out/peer.log" 2>&1 ||
      { echo "pytorch $p failed:"; grep -v Warning "$out/peer.log" | tail -4; }
  done
  unset IFS
fi
runs=
for v in "$@"; do runs="$runs $v=$out/$name-$v-w$n.json"; done
python3 "$here/speed_table.py" "$n" "$peers" $runs
