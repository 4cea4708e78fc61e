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
    radii = [0.0] * n
    order = sorted(range(n), key=lambda i: ORDER_BIAS * math.hypot(points[i][0] - 0.5, points[i][1] - 0.5))
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


def main():
    points = refine(centres())
    radii = grow(points)
    out = sys.stdout
    for (x, y), r in zip(points, radii):
        out.write("%.17g %.17g %.17g\n" % (x, y, max(r * (1 - 1e-9) - 1e-12, 0.0)))


if __name__ == "__main__":
    main()
