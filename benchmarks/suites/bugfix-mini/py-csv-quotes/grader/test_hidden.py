import unittest

from minicsv import join_row, split_row


class HiddenSplitRowTest(unittest.TestCase):
    def test_plain_fields(self):
        self.assertEqual(split_row("a,b,c"), ["a", "b", "c"])

    def test_quoted_separator(self):
        self.assertEqual(split_row('a,"b,c",d'), ["a", "b,c", "d"])

    def test_doubled_quotes(self):
        self.assertEqual(split_row('a,"say ""hi""",b'), ["a", 'say "hi"', "b"])

    def test_doubled_quote_at_end_of_field(self):
        self.assertEqual(split_row('"x""",y'), ['x"', "y"])

    def test_only_a_quote(self):
        self.assertEqual(split_row('""""'), ['"'])

    def test_round_trip(self):
        for row in (["a"], ['he said "no"', "x,y", ""], ['"', '""', "plain"]):
            self.assertEqual(split_row(join_row(row)), row)

    def test_other_separator(self):
        self.assertEqual(split_row('a;"b;""c""";d', sep=";"), ["a", 'b;"c"', "d"])


if __name__ == "__main__":
    unittest.main()
