# GPU call H (call G's 2 H200s, warm): PyTorch DDP, FSDP2 and compiled
# FSDP2 on GPT-2 XL at 4 x 1024 per GPU, the peers of call G's dsrun rows
# (speed_compare.sh with no dsrun variant; speed_table.py puts them side
# by side).
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
[ -f /tmp/tokens.bin ] || python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > /tmp/data.log 2>&1
[ -f /tmp/models/gpt2-xl/model.safetensors ] || python3 runtime/bench/hf_model.py gpt2-xl /tmp/models/gpt2-xl --no-onnx > /tmp/w2.log 2>&1
timeout 560 runtime/bench/speed_compare.sh build-gpu/bin/dsrun build-gpu/sp2 /tmp/models /tmp/tokens.bin /tmp/rx 2 gpt2-xl 4 1024 > $OUT/speed-gpt2-xl-peers.txt 2>&1
cp /tmp/rx/gpt2-xl-w2-peers.jsonl $OUT/
echo "== end after $SECONDS s"; cat $OUT/speed-gpt2-xl-peers.txt
