"""Whether a resumed run's losses equal an uninterrupted run's, bit for bit.

    python3 resumed_losses.py WHOLE.json RESUMED.json STEP

Both files are dsrun --json logs; STEP is the checkpoint's step. Prints how
many of the steps after STEP match (and the first of them, both ways) and
exits 1 unless every one does.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_losses import losses  # noqa: E402


whole, resumed, at = losses(sys.argv[1]), losses(sys.argv[2]), int(sys.argv[3])
after = [s for s in sorted(whole) if s > at]
same = [s for s in after if resumed.get(s) == whole[s]]
first = ("" if not after or resumed.get(after[0]) is None else
         f" (step {after[0]}: {whole[after[0]]:.6f} / {resumed[after[0]]:.6f})")
print(f"{len(same)} of {len(after)} losses after step {at} equal to the "
      f"uninterrupted run's bit for bit{first}")
sys.exit(0 if after and len(same) == len(after) else 1)
