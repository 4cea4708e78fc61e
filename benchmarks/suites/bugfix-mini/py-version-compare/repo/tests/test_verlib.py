import unittest

from verlib import compare_versions, latest


class CompareTest(unittest.TestCase):
    def test_equal(self):
        self.assertEqual(compare_versions("1.2.3", "1.2.3"), 0)

    def test_patch_order(self):
        self.assertEqual(compare_versions("1.2.3", "1.2.4"), -1)

    def test_prerelease_before_release(self):
        self.assertEqual(compare_versions("2.0.0-rc1", "2.0.0"), -1)

    def test_latest(self):
        self.assertEqual(latest(["0.1.0", "0.3.0", "0.2.0"]), "0.3.0")


if __name__ == "__main__":
    unittest.main()
