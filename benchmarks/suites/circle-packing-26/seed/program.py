"""26 disjoint circles in the unit square, maximising the sum of radii (Troupe evolve seed).

Writes one line per circle to stdout, "x y r" (decimal numbers), and nothing else; the evaluator
checks the printed values exactly (no tolerance), so the radii are shrunk by a hair before
printing. Centres come from a row layout; the radii are then grown greedily (each circle takes
what its walls and neighbours leave it) over several passes.

Tunable parameters (troupe:param markers):
    LAYOUT      which row pattern (number of circles per row, bottom to top)
    MARGIN_X    horizontal inset of the outermost centres
    MARGIN_Y    vertical inset of the bottom and top rows
    ROW_SHIFT   horizontal offset of every other row (hexagonal staggering)
    EDGE_PULL   moves the first and last centre of each row towards the walls
    ORDER_BIAS  growth order: >0 grows circles near the centre of the square first
    REFINE_STEPS, REFINE_STEP, REFINE_SEED
                hill climbing on the centres afterwards: move one centre by a gaussian step
                (shrinking over the run), keep the move if the sum of radii does not drop;
                0 steps skips it (each step costs about 10 ms)
    OPT_STEPS, OPT_LR, OPT_MU_START, OPT_MU_END, OPT_JITTER, OPT_SEED
                penalty optimisation of all centres and radii together afterwards: Adam steps
                on -sum(r) + mu * (squared overlaps and wall crossings), from the centres above
                moved by a gaussian OPT_JITTER (a symmetric layout is a saddle) and their greedy
                radii; mu grows geometrically from OPT_MU_START to OPT_MU_END while the step
                decays from OPT_LR to OPT_LR / 20; then the radii are shrunk until feasible and
                grown greedily again. 0 steps (the default) skips it and keeps the output above
                unchanged (each step costs about 0.2 ms)
"""
import math
import random
import sys

LAYOUT = 0  # troupe:param int[0,3]
MARGIN_X = 0.1  # troupe:param float[0.02,0.2]
MARGIN_Y = 0.1  # troupe:param float[0.02,0.2]
ROW_SHIFT = 0.0  # troupe:param float[0,0.5]
EDGE_PULL = 0.0  # troupe:param float[0,0.05]
ORDER_BIAS = 0.0  # troupe:param float[-1,1]
REFINE_STEPS = 0  # troupe:param int[0,400]
REFINE_STEP = 0.05  # troupe:param float[0.005,0.2] log
REFINE_SEED = 0  # troupe:param int[0,1000]
OPT_STEPS = 0  # troupe:param int[0,6000]
OPT_LR = 0.003  # troupe:param float[0.0005,0.02] log
OPT_MU_START = 1000.0  # troupe:param float[10,10000] log
OPT_MU_END = 100000.0  # troupe:param float[1000,10000000] log
OPT_JITTER = 0.02  # troupe:param float[0,0.05]
OPT_SEED = 0  # troupe:param int[0,1000]

LAYOUTS = [[5, 5, 6, 5, 5], [6, 5, 4, 5, 6], [5, 6, 4, 6, 5], [4, 5, 4, 4, 5, 4]]


def centres():
    rows = LAYOUTS[LAYOUT]
    points = []
    for k, count in enumerate(rows):
        y = MARGIN_Y + (1 - 2 * MARGIN_Y) * k / (len(rows) - 1)
        shift = ROW_SHIFT / max(count, 1) if k % 2 else 0.0
        for i in range(count):
            t = i / (count - 1) if count > 1 else 0.5
            x = MARGIN_X + (1 - 2 * MARGIN_X) * t + shift * (1 - 2 * MARGIN_X)
            if i == 0:
                x -= EDGE_PULL
            if i == count - 1:
                x += EDGE_PULL
            points.append((min(max(x, 0.001), 0.999), min(max(y, 0.001), 0.999)))
    return points


def grow(points, passes=60):
    n = len(points)
    order = sorted(range(n), key=lambda i: ORDER_BIAS * math.hypot(points[i][0] - 0.5, points[i][1] - 0.5))
    return grow_from(points, [0.0] * n, order, passes)


def grow_from(points, radii, order, passes):
    """Each circle in `order` takes what its walls and neighbours leave it, `passes` times."""
    n = len(points)
    for _ in range(passes):
        for i in order:
            x, y = points[i]
            room = min(x, y, 1 - x, 1 - y)
            for j in range(n):
                if j != i:
                    room = min(room, math.hypot(x - points[j][0], y - points[j][1]) - radii[j])
            radii[i] = max(room, 0.0)
    return radii


def refine(points):
    rng = random.Random(REFINE_SEED)
    best = sum(grow(points, 12))
    for k in range(REFINE_STEPS):
        i = rng.randrange(len(points))
        old = points[i]
        step = REFINE_STEP * (1 - k / REFINE_STEPS)
        x = min(max(old[0] + rng.gauss(0, step), 0.001), 0.999)
        y = min(max(old[1] + rng.gauss(0, step), 0.001), 0.999)
        points[i] = (x, y)
        total = sum(grow(points, 12))
        if total >= best:
            best = total
        else:
            points[i] = old
    return points


def optimise(points, radii):
    """Adam on (x, y, r) against -sum(r) + mu * penalty, mu rising, the step decaying."""
    rng = random.Random(OPT_SEED)
    n = len(points)
    v = [p[0] + rng.gauss(0, OPT_JITTER) for p in points]
    v += [p[1] + rng.gauss(0, OPT_JITTER) for p in points]
    v += list(radii)
    m = [0.0] * (3 * n)
    s = [0.0] * (3 * n)
    b1, b2 = 0.9, 0.999
    last = max(OPT_STEPS - 1, 1)
    for k in range(OPT_STEPS):
        mu = OPT_MU_START * (OPT_MU_END / OPT_MU_START) ** (k / last)
        g = [0.0] * (2 * n) + [-1.0] * n
        xs, ys, rs = v[:n], v[n : 2 * n], v[2 * n :]
        for i in range(n):
            xi, yi, ri = xs[i], ys[i], rs[i]
            walls = ((ri - xi, 0, -1), (xi + ri - 1, 0, 1), (ri - yi, n, -1), (yi + ri - 1, n, 1))
            for t, axis, sign in walls:
                if t > 0:
                    g[2 * n + i] += 2 * mu * t
                    g[axis + i] += 2 * mu * t * sign
            if ri < 0:
                g[2 * n + i] += 2 * mu * ri
            for j in range(i + 1, n):
                dx = xi - xs[j]
                dy = yi - ys[j]
                d = math.sqrt(dx * dx + dy * dy) + 1e-12
                t = ri + rs[j] - d
                if t > 0:
                    c = 2 * mu * t
                    g[2 * n + i] += c
                    g[2 * n + j] += c
                    ux = c * dx / d
                    uy = c * dy / d
                    g[i] -= ux
                    g[j] += ux
                    g[n + i] -= uy
                    g[n + j] += uy
        lr = OPT_LR * 0.05 ** (k / last)
        a = lr * math.sqrt(1 - b2 ** (k + 1)) / (1 - b1 ** (k + 1))
        for q in range(3 * n):
            m[q] = b1 * m[q] + (1 - b1) * g[q]
            s[q] = b2 * s[q] + (1 - b2) * g[q] * g[q]
            v[q] -= a * m[q] / (math.sqrt(s[q]) + 1e-12)
    points = [(min(max(v[i], 0.001), 0.999), min(max(v[n + i], 0.001), 0.999)) for i in range(n)]
    return points, [max(r, 0.0) for r in v[2 * n :]]


def make_feasible(points, radii, passes=60):
    """Shrink radii into the walls, then every overlapping pair in proportion; grow again."""
    n = len(points)
    radii = [max(0.0, min(r, x, y, 1 - x, 1 - y)) for (x, y), r in zip(points, radii)]
    for _ in range(200):
        overlapping = False
        for i in range(n):
            for j in range(i + 1, n):
                d = math.hypot(points[i][0] - points[j][0], points[i][1] - points[j][1])
                if radii[i] + radii[j] > d:
                    f = d / (radii[i] + radii[j])
                    radii[i] *= f
                    radii[j] *= f
                    overlapping = True
        if not overlapping:
            break
    return grow_from(points, radii, range(n), passes)


def main():
    points = refine(centres())
    radii = grow(points)
    if OPT_STEPS > 0:
        points, radii = optimise(points, radii)
        radii = make_feasible(points, radii)
    out = sys.stdout
    for (x, y), r in zip(points, radii):
        out.write("%.17g %.17g %.17g\n" % (x, y, max(r * (1 - 1e-9) - 1e-12, 0.0)))


if __name__ == "__main__":
    main()
