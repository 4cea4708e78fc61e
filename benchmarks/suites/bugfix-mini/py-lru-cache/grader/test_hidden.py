import unittest

from cachetools_lite import LRUCache


class HiddenLRUCacheTest(unittest.TestCase):
    def test_get_refreshes(self):
        c = LRUCache(2)
        c.put("a", 1)
        c.put("b", 2)
        self.assertEqual(c.get("a"), 1)
        c.put("c", 3)
        self.assertEqual(c.get("a"), 1)
        self.assertNotIn("b", c)
        self.assertIn("c", c)

    def test_update_existing_key_does_not_evict(self):
        c = LRUCache(2)
        c.put("a", 1)
        c.put("b", 2)
        c.put("a", 10)
        self.assertEqual(len(c), 2)
        self.assertIn("b", c)
        self.assertEqual(c.get("a"), 10)

    def test_update_counts_as_use(self):
        c = LRUCache(2)
        c.put("a", 1)
        c.put("b", 2)
        c.put("a", 3)
        c.put("c", 4)
        self.assertNotIn("b", c)
        self.assertEqual(c.get("a"), 3)

    def test_size_one(self):
        c = LRUCache(1)
        c.put("a", 1)
        c.put("b", 2)
        self.assertEqual(len(c), 1)
        self.assertEqual(c.get("b"), 2)

    def test_counters(self):
        c = LRUCache(3)
        c.put("x", 1)
        c.get("x")
        c.get("x")
        c.get("y")
        self.assertEqual((c.hits, c.misses), (2, 1))


if __name__ == "__main__":
    unittest.main()
