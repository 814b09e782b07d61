"""Server messages, read back in the order python-oracledb's thin driver reads them."""

from __future__ import annotations

from app.oraclesim.database.queries import Column
from app.oraclesim.wire import messages as msg
from app.oraclesim.wire.codec import Reader, Writer


def test_error_message_fields_in_driver_order():
    r = Reader(msg.error(Writer(), 1017, cursor_id=3, rowcount=9, call_status=2).getvalue())
    assert r.u8() == msg.MSG_ERROR
    assert r.uint() == 2  # end of call status
    for _ in range(5):
        r.uint()
    assert r.uint() == 3  # cursor id
    r.uint()  # error position
    r.raw(6)
    r.uint(), r.uint(), r.u8(), r.uint(), r.uint()  # rowid
    r.uint(), r.u8(), r.u8(), r.uint(), r.uint(), r.uint()
    assert (r.uint(), r.uint(), r.uint()) == (0, 0, 0)  # no batch errors
    assert (r.uint(), r.uint()) == (1017, 9)
    assert (r.bytes_() or b"").startswith(b"ORA-01017: ")
    assert r.at_end()


def test_parameters_and_status():
    r = Reader(msg.status(msg.parameters(Writer(), [("K", "V", 7)]), 0, 5).getvalue())
    assert r.u8() == msg.MSG_PARAMETER and r.uint() == 1
    assert (r.str_two_lengths(), r.str_two_lengths(), r.uint()) == ("K", "V", 7)
    assert (r.u8(), r.uint(), r.uint()) == (msg.MSG_STATUS, 0, 5)


def test_describe_and_rows():
    cols = [Column("N", "number"), Column("S", "varchar")]
    w = msg.describe(Writer(), cols)
    msg.row_header(w)
    msg.row_data(w, cols, (12, "ab"))
    msg.row_data(w, cols, (None, None))
    data = w.getvalue()
    assert data[0] == msg.MSG_DESCRIBE
    assert data.endswith(bytes([msg.MSG_ROW_DATA, 2, 0xC1, 13, 2]) + b"ab" + bytes([7, 0, 0]))
