import unittest

from durations import parse_duration


class HiddenParseDurationTest(unittest.TestCase):
    def test_single_units(self):
        self.assertEqual(parse_duration("90s"), 90)
        self.assertEqual(parse_duration("1d"), 86400)

    def test_compound(self):
        self.assertEqual(parse_duration("1h30m"), 5400)
        self.assertEqual(parse_duration("2d4h"), 187200)
        self.assertEqual(parse_duration("1m30s"), 90)
        self.assertEqual(parse_duration("1h1m1s"), 3661)

    def test_milliseconds(self):
        self.assertAlmostEqual(parse_duration("1s500ms"), 1.5)
        self.assertAlmostEqual(parse_duration("250ms"), 0.25)

    def test_malformed(self):
        for bad in ("", "1x", "h", "1h 30m", "30m1"):
            with self.assertRaises(ValueError):
                parse_duration(bad)


if __name__ == "__main__":
    unittest.main()
