import unittest

from cachetools_lite import LRUCache


class LRUCacheTest(unittest.TestCase):
    def test_get_put(self):
        c = LRUCache(2)
        c.put("a", 1)
        self.assertEqual(c.get("a"), 1)
        self.assertIsNone(c.get("zzz"))
        self.assertEqual((c.hits, c.misses), (1, 1))

    def test_evicts_oldest_insert(self):
        c = LRUCache(2)
        c.put("a", 1)
        c.put("b", 2)
        c.put("c", 3)
        self.assertNotIn("a", c)
        self.assertEqual(len(c), 2)

    def test_rejects_zero_size(self):
        with self.assertRaises(ValueError):
            LRUCache(0)


if __name__ == "__main__":
    unittest.main()
