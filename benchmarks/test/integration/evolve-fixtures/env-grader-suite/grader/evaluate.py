"""Evaluator of env-grader-suite: quick-suite's, but it needs jq (from its grader environment)."""
import argparse, json, math, subprocess, sys, time

# Crashes (no result line) where jq is missing: the environment must have installed it.
assert subprocess.run(["jq", "-n", "1+1"], capture_output=True, text=True, check=True).stdout.strip() == "2"

t0 = time.monotonic()
p = argparse.ArgumentParser()
p.add_argument('--program')
p.add_argument('--timeout-s', type=float)
a = p.parse_args()
out = {"status": "ok", "score": None, "signature": [], "metrics": {}, "stderrTail": "",
       "evalMs": 0, "evaluatorVersion": "env-grader-suite/1"}
try:
    r = subprocess.run([sys.executable, a.program], capture_output=True, text=True,
                       timeout=a.timeout_s)
    out["stderrTail"] = r.stderr[-500:]
    if r.returncode != 0:
        out["status"] = "error"
    else:
        x, y = (float(v) for v in r.stdout.split()[:2])
        if not (math.isfinite(x) and math.isfinite(y)):
            out["status"] = "invalid"
        else:
            out["score"] = -((x - 0.3) ** 2 + (y - 0.7) ** 2)
            out["signature"] = [x, y]
except subprocess.TimeoutExpired:
    out["status"] = "timeout"
except Exception as e:  # wrong shape of the output
    out["status"] = "invalid"
    out["metrics"] = {"reason": str(e)[:200]}
rest = 0.4 - (time.monotonic() - t0)
if rest > 0:
    time.sleep(rest)
out["evalMs"] = round((time.monotonic() - t0) * 1000)
print(json.dumps(out))
