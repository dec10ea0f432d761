python3 - <<'PY'
s = open('wordcount.py').read()
s = s.replace('''    args = parser.parse_args(argv)
    with open(args.file, encoding="utf-8") as f:
        counts = count_words(f.read())''', '''    parser.add_argument("--ignore-case", action="store_true", help="count words without regard to case")
    args = parser.parse_args(argv)
    with open(args.file, encoding="utf-8") as f:
        text = f.read()
    counts = count_words(text.lower() if args.ignore_case else text)''')
open('wordcount.py', 'w').write(s)
PY
cat > tests/test_ignore_case.py <<'PY'
import contextlib, io, os, tempfile, unittest
from wordcount import main

class IgnoreCaseTest(unittest.TestCase):
    def test_ignore_case(self):
        with tempfile.NamedTemporaryFile('w', suffix='.txt', delete=False) as f:
            f.write('A a B')
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            main(['--ignore-case', '--top', '1', f.name])
        os.unlink(f.name)
        self.assertEqual(out.getvalue(), '2 a\n')
PY
