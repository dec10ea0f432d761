"""The event stream's parser, without a server."""

from __future__ import annotations

import unittest

import drydock
from drydock._common import SSEParser, build_url, parse_base


class SSEParserTest(unittest.TestCase):
    def test_events_split_across_chunks_with_any_line_ending(self) -> None:
        p = SSEParser(0)
        stream = (b"retry: 2000\r\n\r\n: ping\r\n\r\nid: 1\r\nevent: status\r\ndata: {\"seq\":1,\"type\":\"status\"}\r\n\r\n"
                  b"id: 2\nevent: log\ndata: {\"seq\":2,\ndata: \"type\":\"log\"}\n\nevent: end\ndata: {}\n\n")
        got = []
        for i in range(0, len(stream), 7):
            got += p.feed(stream[i : i + 7])
        self.assertEqual([(e["seq"], e["type"]) for e in got], [(1, "status"), (2, "log")])
        self.assertTrue(p.ended)
        self.assertEqual(p.retry_min, 2.0)
        self.assertEqual(p.last, 2)

    def test_an_event_without_seq_or_type_takes_them_from_id_and_event(self) -> None:
        p = SSEParser(0)
        (e,) = p.feed(b"id: 7\nevent: usage\ndata: {}\n\n")
        self.assertEqual((e["seq"], e["type"]), (7, "usage"))

    def test_events_seen_before_a_reconnect_are_not_given_twice(self) -> None:
        p = SSEParser(5)
        got = p.feed(b"id: 5\ndata: {\"seq\":5}\n\nid: 6\ndata: {\"seq\":6}\n\n")
        self.assertEqual([e["seq"] for e in got], [6])

    def test_a_malformed_event_or_an_endless_line_is_an_error(self) -> None:
        with self.assertRaisesRegex(drydock.DrydockError, "malformed event"):
            SSEParser(0).feed(b"id: 1\ndata: {nope\n\n")
        with self.assertRaisesRegex(drydock.DrydockError, "too long"):
            p = SSEParser(0)
            for _ in range(5):
                p.feed(b"data: " + b"x" * (1 << 20))


class URLTest(unittest.TestCase):
    def test_base_urls(self) -> None:
        self.assertEqual(parse_base("127.0.0.1:8080/"), "http://127.0.0.1:8080")
        self.assertEqual(parse_base("https://dd.example/prefix/?q=1#f"), "https://dd.example/prefix")
        for bad in ("", "ftp://x", "http://user:pw@x", "http://"):
            with self.assertRaises(drydock.DrydockError, msg=bad):
                parse_base(bad)

    def test_path_parameters_are_escaped_segment_by_segment(self) -> None:
        self.assertEqual(build_url("http://h", "getJob", {"id": "../x?y"}), "http://h/v1/jobs/..%2Fx%3Fy")
        self.assertEqual(build_url("http://h", "workspaceFile", {"id": "j", "path": "a b/c#d"}, {"download": True}),
                         "http://h/v1/jobs/j/files/a%20b/c%23d?download=true")
        with self.assertRaises(drydock.DrydockError):
            build_url("http://h", "nope")


if __name__ == "__main__":
    unittest.main()
