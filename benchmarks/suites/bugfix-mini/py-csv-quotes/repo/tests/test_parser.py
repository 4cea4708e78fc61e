import unittest

from minicsv import join_row, split_row


class SplitRowTest(unittest.TestCase):
    def test_plain_fields(self):
        self.assertEqual(split_row("a,b,c"), ["a", "b", "c"])

    def test_quoted_separator(self):
        self.assertEqual(split_row('a,"b,c",d'), ["a", "b,c", "d"])

    def test_empty_fields(self):
        self.assertEqual(split_row(",,"), ["", "", ""])

    def test_join_quotes_separator(self):
        self.assertEqual(join_row(["a", "b,c"]), 'a,"b,c"')


if __name__ == "__main__":
    unittest.main()
