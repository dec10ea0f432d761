import os
import tempfile
import unittest

from {{.Noun}} import {{.Class}}List


class {{.Class}}ListTest(unittest.TestCase):
    def test_add_trims_the_title(self):
        items = {{.Class}}List()
        x = items.add("  Write the README  ")
        self.assertEqual(x.title, "Write the README")
        self.assertEqual(items.remaining(), 1)

    def test_blank_title_is_refused(self):
        with self.assertRaises(ValueError):
            {{.Class}}List().add("   ")

    def test_toggle_and_remove(self):
        items = {{.Class}}List()
        a, b = items.add("one"), items.add("two")
        items.toggle(a.id)
        self.assertEqual(items.remaining(), 1)
        items.remove(b.id)
        self.assertEqual([x.title for x in items.{{.Nouns}}], ["one"])

    def test_save_and_load(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "{{.Nouns}}.json")
            items = {{.Class}}List()
            items.add("kept")
            items.save(path)
            self.assertEqual([x.title for x in {{.Class}}List.load(path).{{.Nouns}}], ["kept"])


if __name__ == "__main__":
    unittest.main()
