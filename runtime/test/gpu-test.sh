#!/bin/sh
# One test of `ctest -L gpu` (runtime/CMakeLists.txt). Exits 77, which
# ctest reports as skipped, on a machine with fewer than GPUS GPUs; fails
# when the plans utils/gpu-test-plans.sh writes are missing there.
#
#   gpu-test.sh GPUS PLANS COMMAND...
need=$1 plans=$2
shift 2
have=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ "${have:-0}" -lt "$need" ]; then
  echo "skipped: needs $need GPU(s), this machine has ${have:-0}"
  exit 77
fi
if [ ! -d "$plans" ]; then
  echo "no GPU test plans at $plans: write them with utils/gpu-test-plans.sh" \
       "where dsc is built, and configure with -DDSRUN_GPU_PLANS=DIR"
  exit 1
fi
export NCCL_NVLS_ENABLE=0
exec "$@"
