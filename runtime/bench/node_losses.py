"""Two dsrun --json logs of the same training over the same ranks, laid
out differently (one node, or several): how many steps agree bit for bit,
and the largest relative difference of the rest.

    python3 node_losses.py ONE.json OTHER.json STEPS TOLERANCE

Exits 1 when a step of the STEPS is missing from either log or differs by
more than TOLERANCE (relative).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_losses import losses  # noqa: E402

one, other = losses(sys.argv[1]), losses(sys.argv[2])
steps, tolerance = int(sys.argv[3]), float(sys.argv[4])
wanted = range(1, steps + 1)
missing = [s for s in wanted if s not in one or s not in other]
if missing:
    print(f"FAILED: step {missing[0]} is missing from a log")
    sys.exit(1)
equal = sum(one[s] == other[s] for s in wanted)
worst = max(abs(other[s] - one[s]) / abs(one[s]) for s in wanted)
verdict = "passed" if worst <= tolerance else "FAILED"
print(f"{verdict}: {equal} of {steps} losses equal bit for bit; largest "
      f"relative difference {worst:.2e} (at most {tolerance:g}); step "
      f"{steps}: {one[steps]:.6f} / {other[steps]:.6f}")
sys.exit(0 if worst <= tolerance else 1)
