import unittest

from calc import average


class AverageTest(unittest.TestCase):
    def test_average_of_three_numbers(self) -> None:
        self.assertEqual(average([1, 2, 3]), 2)

    def test_average_of_empty_list_is_zero(self) -> None:
        self.assertEqual(average([]), 0.0)


if __name__ == "__main__":
    unittest.main()
