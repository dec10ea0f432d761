import unittest

from stats import mean, median


class MeanTest(unittest.TestCase):
    def test_whole(self):
        self.assertEqual(mean([2, 4, 6]), 4)

    def test_fraction(self):
        self.assertAlmostEqual(mean([1, 2]), 1.5)

    def test_empty(self):
        with self.assertRaises(ValueError):
            mean([])


class MedianTest(unittest.TestCase):
    def test_odd(self):
        self.assertEqual(median([3, 1, 2]), 2)

    def test_even(self):
        self.assertEqual(median([4, 1, 3, 2]), 2.5)


if __name__ == "__main__":
    unittest.main()
