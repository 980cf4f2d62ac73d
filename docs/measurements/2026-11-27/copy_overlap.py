# How much of the measured step's copy-out time runs beside the compute
# stream's backward and beside the host stream's work (trace of dsrun --trace).
import json, sys
def spans(ev, tid, pred=lambda e: True):
    return sorted((e['ts'], e['ts'] + e['dur']) for e in ev
                  if e.get('pid') == 0 and e.get('tid') == tid and e.get('ph') == 'X' and pred(e))
def union(s):
    out = []
    for a, b in s:
        if out and a <= out[-1][1]: out[-1][1] = max(out[-1][1], b)
        else: out.append([a, b])
    return out
def overlap(x, y):
    tot = 0; y = union(y)
    for a, b in union(x):
        for c, d in y:
            tot += max(0, min(b, d) - max(a, c))
    return tot
for f in sys.argv[1:]:
    t = json.load(open(f)); ev = t['traceEvents'] if isinstance(t, dict) else t
    out = spans(ev, 3); host = spans(ev, 4)
    bwd = spans(ev, 0, lambda e: 'backward' in e['name'])
    comp = spans(ev, 0)
    busy = sum(b - a for a, b in union(out))
    print(f"{f}: copy-out busy {busy/1e3:.1f} ms; beside backward {overlap(out, bwd)/1e3:.1f} ms, "
          f"beside any compute {overlap(out, comp)/1e3:.1f} ms, beside host work {overlap(out, host)/1e3:.1f} ms; "
          f"backward {sum(b-a for a,b in union(bwd))/1e3:.1f} ms, host {sum(b-a for a,b in union(host))/1e3:.1f} ms")
