import unittest

from verlib import compare_versions, latest


class HiddenCompareTest(unittest.TestCase):
    def test_equal(self):
        self.assertEqual(compare_versions("1.2.3", "1.2.3"), 0)

    def test_numeric_not_textual(self):
        self.assertEqual(compare_versions("1.10.0", "1.9.0"), 1)
        self.assertEqual(compare_versions("1.9.0", "1.10.0"), -1)
        self.assertEqual(compare_versions("10.0.0", "9.99.99"), 1)

    def test_missing_components(self):
        self.assertEqual(compare_versions("1.2", "1.2.0"), 0)
        self.assertEqual(compare_versions("1.2", "1.10"), -1)

    def test_prerelease(self):
        self.assertEqual(compare_versions("2.0.0-rc1", "2.0.0"), -1)
        self.assertEqual(compare_versions("2.0.0", "2.0.0-rc1"), 1)
        self.assertEqual(compare_versions("2.0.0-rc1", "2.0.0-rc2"), -1)

    def test_latest(self):
        self.assertEqual(latest(["1.9.0", "1.10.0", "1.2.0"]), "1.10.0")
        self.assertEqual(latest(["2.0.0-rc1", "1.99.0"]), "2.0.0-rc1")


if __name__ == "__main__":
    unittest.main()
