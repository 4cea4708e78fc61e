"""Online bin packing with a parametric priority function (Troupe evolve seed).

Items arrive one at a time; each goes to the open bin with the highest priority, or to a new bin
when that scores highest (or nothing else fits). With every parameter at its default the
priority is best fit (the least room left over wins), which uses 212.0 bins on average on OR3.

Tunable parameters (troupe:param markers: the built-in operators rewrite these values; all
weights are in units of the bin capacity):
    LEFTOVER_POWER   exponent of the leftover term; alone it changes nothing (monotone)
    LEFTOVER_WEIGHT  weight of the leftover term (the other terms matter more when it is small)
    GAP_LIMIT        leftovers in (0, GAP_LIMIT) are hard to use later ...
    GAP_PENALTY      ... and cost this much priority (0 by default: GAP_LIMIT starts inside its
                     range so that a change of GAP_PENALTY alone already moves the priority)
    EXACT_BONUS      bonus for a perfect fit (leftover 0)
    FILL_WEIGHT      penalty on (room before) * (leftover after), favouring fuller bins
    NEW_BIN_PENALTY  priority removed from opening a new bin (negative: a bonus)
    TIGHT_LIMIT      the tightest open bin (the best-fit one) is a "close fit" when
                     (room before) * (leftover after) is below this ...
    TIGHT_BONUS      ... and gains TIGHT_BONUS * item * (TIGHT_LIMIT - room * leftover) (item in
                     units of the capacity): more for a closer fit and a larger item, a loss
                     for a loose fit (0: off)
    TIGHT_PENALTY    the tightest open bin loses TIGHT_PENALTY * leftover**4: a loose best fit is
                     left for a later item (the 0.001 default cannot change a placement)

Protocol with the evaluator (stdin/stdout, one line each; diagnostics go to stderr only):
"instance <capacity>" starts an instance, "item <size>" asks for a bin index (0-based; the
number of open bins opens a new one), "end" ends the instance, end of input ends the program.
"""
import sys

LEFTOVER_POWER = 1.0  # troupe:param float[0.5,2]
LEFTOVER_WEIGHT = 1.0  # troupe:param float[0,1]
GAP_LIMIT = 0.2  # troupe:param float[0,0.4]
GAP_PENALTY = 0.0  # troupe:param float[0,1]
EXACT_BONUS = 0.0  # troupe:param float[0,1]
FILL_WEIGHT = 0.0  # troupe:param float[0,2]
NEW_BIN_PENALTY = 0.0  # troupe:param float[-0.5,0.5]
TIGHT_LIMIT = 0.05  # troupe:param float[0,0.2]
TIGHT_BONUS = 0.0  # troupe:param float[0,400]
TIGHT_PENALTY = 0.001  # troupe:param float[0.001,100000] log


def priority(item, bins, capacity):
    """Priority of each candidate bin; `bins` holds the distinct remaining capacities that can
    take the item, in ascending order, the last one being `capacity` (a new bin). Ties go to the
    earlier entry."""
    scores = []
    size = item / capacity
    for index, room in enumerate(bins):
        left = (room - item) / capacity
        score = -LEFTOVER_WEIGHT * left**LEFTOVER_POWER
        if 0 < left < GAP_LIMIT:
            score -= GAP_PENALTY
        if left == 0:
            score += EXACT_BONUS
        score -= FILL_WEIGHT * (room / capacity) * left
        if room == capacity:
            score -= NEW_BIN_PENALTY
        elif index == 0:
            fit = (room / capacity) * left
            score += TIGHT_BONUS * size * (TIGHT_LIMIT - fit) - TIGHT_PENALTY * left**4
        scores.append(score)
    return scores


class Packer:
    """Open bins grouped by remaining capacity: bins with equal room are interchangeable for the
    priority, so it is evaluated once per distinct room (at most `capacity` values)."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.count = 0
        self.by_room = {}

    def place(self, item):
        rooms = sorted(room for room in self.by_room if room >= item)
        rooms.append(self.capacity)
        scores = priority(item, rooms, self.capacity)
        best = max(range(len(rooms)), key=scores.__getitem__)
        room = rooms[best]
        if best == len(rooms) - 1:
            index = self.count
            self.count += 1
        else:
            indices = self.by_room[room]
            index = indices.pop()
            if not indices:
                del self.by_room[room]
        self.by_room.setdefault(room - item, []).append(index)
        return index


def main():
    packer = None
    out = sys.stdout
    for line in sys.stdin:
        word, _, arg = line.partition(" ")
        if word == "item":
            out.write("%d\n" % packer.place(int(arg)))
            out.flush()
        elif word == "instance":
            packer = Packer(int(arg))
        elif word.strip() == "end":
            packer = None


if __name__ == "__main__":
    main()
