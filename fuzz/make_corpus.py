#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Writes the seed corpus for the libFuzzer targets into fuzz/corpus/<target>/.

    python3 fuzz/make_corpus.py            # (re)writes the generated seeds
    python3 fuzz/make_corpus.py --check    # exits 1 if a generated seed is missing or differs

The seeds are small, readable starting points: valid submits, grabs and work results, admin
lines, and malformed packets. Each is written in the input format of its target (see the comment
at the top of each fuzz_*.c). Files whose name starts with "crash-" or "regress-" are
reproducers added by hand and are left alone.
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# command numbers (Gearman PROTOCOL)
CAN_DO, CANT_DO, RESET_ABILITIES, PRE_SLEEP = 1, 2, 3, 4
SUBMIT_JOB, GRAB_JOB = 7, 9
WORK_STATUS, WORK_COMPLETE, WORK_FAIL, GET_STATUS, ECHO_REQ = 12, 13, 14, 15, 16
SUBMIT_JOB_BG, SUBMIT_JOB_HIGH, SET_CLIENT_ID, CAN_DO_TIMEOUT = 18, 21, 22, 23
WORK_EXCEPTION, OPTION_REQ, WORK_DATA, WORK_WARNING, GRAB_JOB_UNIQ = 25, 26, 28, 29, 30
SUBMIT_JOB_HIGH_BG, SUBMIT_JOB_LOW, SUBMIT_JOB_LOW_BG = 32, 33, 34
SUBMIT_JOB_SCHED, SUBMIT_JOB_EPOCH, SUBMIT_REDUCE_JOB, SUBMIT_REDUCE_JOB_BACKGROUND = 35, 36, 37, 38
GRAB_JOB_ALL, GET_STATUS_UNIQUE = 39, 41
CMD_MAX = 43  # one past the last command number (CMD_MAX in src/proto/proto.h)


def b(x):
    return x if isinstance(x, bytes) else str(x).encode()


def pkt(cmd, *args, magic=b"\0REQ", size=None):
    body = b"\0".join(b(a) for a in args)
    return magic + struct.pack(">II", cmd, len(body) if size is None else size) + body


# ---------------------------------------------------------------- fuzz_proto_bin
# byte 0: bits 0-1 pick max_body (0: 8-bit, 1: 16-bit, 2: 32-bit value follows; 3: 64 MiB),
# bit 2 picks the accepted magic (0: \0REQ, 1: \0RES); then the stream.

def proto_bin_seeds():
    s = {}
    s["submit_grab_complete"] = b"\x03" + pkt(SUBMIT_JOB, "f", "u", "data") + pkt(GRAB_JOB) + \
        pkt(WORK_COMPLETE, "H:x:1", "result")
    s["every_submit"] = b"\x03" + b"".join(pkt(c, "f", "u", "d") for c in (7, 18, 21, 32, 33, 34)) + \
        pkt(SUBMIT_JOB_EPOCH, "f", "u", "1700000000", "d") + \
        pkt(SUBMIT_JOB_SCHED, "f", "u", "*", "*", "*", "*", "*", "d") + \
        pkt(SUBMIT_REDUCE_JOB, "f", "u", "red", "agg", "d")
    s["worker_packets"] = b"\x03" + pkt(CAN_DO, "f") + pkt(CAN_DO_TIMEOUT, "f", "100") + \
        pkt(PRE_SLEEP) + pkt(GRAB_JOB_UNIQ) + pkt(WORK_STATUS, "H:x:1", "1", "2") + \
        pkt(WORK_DATA, "H:x:1", "x") + pkt(WORK_FAIL, "H:x:1")
    s["response_magic"] = b"\x07" + pkt(17, "echo", magic=b"\0RES") + pkt(19, "E", "text", magic=b"\0RES")
    s["wrong_magic"] = b"\x03" + pkt(ECHO_REQ, "x", magic=b"\0RES") + pkt(ECHO_REQ, "y")
    s["bad_magic"] = b"\x03GET / HTTP/1.0\r\n"
    s["bad_magic_nul"] = b"\x03\0REX" + b"\0" * 8
    s["too_large_8bit"] = b"\x00\x10" + pkt(ECHO_REQ, "x" * 40) + pkt(ECHO_REQ, "ok")
    s["too_large_16bit"] = b"\x01\x01\x00" + pkt(SUBMIT_JOB, "f", "u", size=0x7fffffff)
    s["size_max32"] = b"\x02\xff\xff\xff\xff" + pkt(ECHO_REQ, size=0xffffffff) + b"abc"
    s["commands_out_of_range"] = b"\x03" + b"".join(
        pkt(c, "junk") for c in (0, CMD_MAX, 65535, 0x80000000, 0xffffffff))
    s["missing_nuls"] = b"\x03" + pkt(SUBMIT_JOB, "fonly") + pkt(WORK_STATUS, "h") + \
        pkt(SUBMIT_JOB_SCHED, "f", "u", "*") + pkt(ECHO_REQ, "after")
    s["zero_size_submit"] = b"\x03" + pkt(SUBMIT_JOB, size=0) + pkt(SUBMIT_JOB_BG, "f", "u", "d")
    s["partial_header"] = b"\x03\0REQ\0\0\0\x07\0\0"
    s["partial_body"] = b"\x03" + pkt(SUBMIT_JOB, "f", "u", "data")[:-2]
    s["nuls_in_last_arg"] = b"\x03" + pkt(CAN_DO, "a\0b") + pkt(WORK_FAIL, "h\0\0") + \
        pkt(SET_CLIENT_ID, "id\0with\0nuls")
    s["empty_args"] = b"\x03" + pkt(SUBMIT_JOB, "", "", "") + pkt(GET_STATUS, "") + pkt(CAN_DO, "")
    return s


# ---------------------------------------------------------------- fuzz_proto_admin
# byte 0: max_line (bit 7 set: 8192, else 0..127); byte 1: tokens pa_split may fill (mod 11).

def proto_admin_seeds():
    s = {}
    s["commands"] = b"\x80\x08" + b"status\nworkers\r\nshow jobs\nshow unique jobs\nversion\n" \
        b"maxqueue f 1 2 3\ncancel job H:x:1\nshutdown graceful\n"
    s["spaces"] = b"\x80\x08" + b" status\n  a  b   c \n\n \r\n"
    s["too_many_tokens"] = b"\x80\x06" + b"a b c d e f g h i j k l\n"
    s["crlf_only"] = b"\x80\x08" + b"\r\n\r\r\n\n"
    s["long_line_small_max"] = b"\x10\x08" + b"x" * 40 + b"\nstatus\n"
    s["exact_max"] = b"\x07\x08" + b"status\n" + b"status1\n"
    s["max_zero"] = b"\x00\x08" + b"\n\nstatus\n"
    s["no_newline"] = b"\x80\x08" + b"workers"
    s["nul_bytes"] = b"\x80\x08" + b"sta\0tus\n\0\0\n"
    s["zero_tokens_allowed"] = b"\x80\x00" + b"a b\n"
    return s


# ---------------------------------------------------------------- fuzz_connection
# 3 configuration bytes, then operations. See fuzz_connection.c for the exact meaning; in short:
# c0 = job_retries+1 + 5*worker_wakeup + 20*exceptions (mixed radix),
# c1 = max_packet (bits 0-1) | max_line (2-3) | max_output (4-5) | short names (6) | short ids (7),
# c2 = admin shutdown policy (mod 3: local, any, none).
# Opcode byte: (slot << 4) | op; ops: 0/1 raw bytes [len][bytes], 2/3 built packet,
# 4 several built packets, 5 a built packet split over reads, 6/7 admin line (whole/split),
# 8 connect, 9 disconnect, 10 half-close, 11 clock step, 12 drain all, 13 drain some,
# 14 output limit, 15 one allocation failing (operand bit 0 set: the (operand >> 1) + 1-th
# allocation from now fails).

def cfg(retries=-1, wakeup=0, exceptions=0, packet=3, line=3, output=3, shutdown=0):
    c0 = (retries + 1) + 5 * wakeup + 20 * exceptions
    c1 = packet | (line << 2) | (output << 4)
    return bytes([c0, c1, shutdown])


def raw(slot, data):
    """Feed data to slot as raw-byte operations (255 bytes at most each)."""
    out = b""
    for i in range(0, len(data), 255):
        chunk = data[i:i + 255]
        out += bytes([(slot << 4) | 0, len(chunk)]) + chunk
    return out


def op(slot, code, *operands):
    return bytes([(slot << 4) | code]) + bytes(operands)


def drain(slot):
    return op(slot, 12)


def clock(step):
    return op(0, 11, step)


def connect(slot, local=True):
    return op(slot, 8, 0 if local else 1)


H1, H2, H3 = "H:f:1", "H:f:2", "H:f:3"


def connection_seeds():
    s = {}
    s["bg_submit_worker_completes"] = cfg() + raw(0, pkt(SUBMIT_JOB_BG, "f0", "u0", "data")) + \
        raw(1, pkt(CAN_DO, "f0") + pkt(GRAB_JOB)) + drain(1) + \
        raw(1, pkt(WORK_COMPLETE, H1, "done")) + raw(0, b"status\n") + drain(0) + drain(1)
    s["fg_submit_forwarding"] = cfg() + raw(0, pkt(SUBMIT_JOB, "f0", "", "payload")) + \
        raw(1, pkt(CAN_DO, "f0") + pkt(GRAB_JOB_UNIQ)) + \
        raw(1, pkt(WORK_STATUS, H1, "1", "4") + pkt(WORK_DATA, H1, "part") +
            pkt(WORK_WARNING, H1, "warn") + pkt(WORK_COMPLETE, H1, "all")) + drain(0) + drain(1)
    s["sleep_and_noop"] = cfg(wakeup=1) + raw(1, pkt(CAN_DO, "f0") + pkt(PRE_SLEEP)) + \
        connect(2) + raw(2, pkt(CAN_DO, "f0") + pkt(PRE_SLEEP)) + \
        raw(0, pkt(SUBMIT_JOB_BG, "f0", "", "a") + pkt(SUBMIT_JOB_BG, "f0", "", "b")) + \
        drain(1) + drain(2) + raw(1, pkt(GRAB_JOB)) + raw(2, pkt(GRAB_JOB)) + drain(1) + drain(2)
    s["can_do_timeout_expires"] = cfg() + raw(1, pkt(CAN_DO_TIMEOUT, "f0", "1000")) + \
        raw(0, pkt(SUBMIT_JOB, "f0", "u1", "x")) + raw(1, pkt(GRAB_JOB)) + clock(8) + \
        drain(0) + drain(1)
    s["timeout_after_complete"] = cfg() + raw(1, pkt(CAN_DO_TIMEOUT, "f0", "500")) + \
        raw(0, pkt(SUBMIT_JOB_BG, "f0", "", "x")) + raw(1, pkt(GRAB_JOB)) + \
        raw(1, pkt(WORK_COMPLETE, H1, "r")) + raw(1, pkt(CAN_DO_TIMEOUT, "f0", "1")) + \
        clock(10) + clock(30) + raw(1, pkt(GRAB_JOB)) + drain(1) + raw(0, b"status\n") + drain(0)
    s["epoch_and_sched"] = cfg() + raw(1, pkt(CAN_DO, "f1") + pkt(PRE_SLEEP)) + \
        raw(0, pkt(SUBMIT_JOB_EPOCH, "f1", "", "1700000100", "later") +
            pkt(SUBMIT_JOB_SCHED, "f1", "", "*", "*", "*", "*", "*", "cron")) + \
        clock(60) + drain(1) + raw(1, pkt(GRAB_JOB) + pkt(GRAB_JOB)) + drain(1)
    s["worker_lost_retries"] = cfg(retries=1) + raw(0, pkt(SUBMIT_JOB, "f0", "", "x")) + \
        raw(1, pkt(CAN_DO, "f0") + pkt(GRAB_JOB)) + op(1, 9) + connect(1) + \
        raw(1, pkt(CAN_DO, "f0") + pkt(GRAB_JOB)) + op(1, 9) + drain(0)
    s["cant_do_and_reset"] = cfg() + raw(0, pkt(SUBMIT_JOB_BG, "f0", "", "a") +
                                         pkt(SUBMIT_JOB_BG, "f1", "", "b")) + \
        raw(1, pkt(CAN_DO, "f0") + pkt(CAN_DO, "f1") + pkt(GRAB_JOB) + pkt(GRAB_JOB) +
            pkt(CANT_DO, "f0") + pkt(RESET_ABILITIES)) + raw(0, b"status\n") + drain(0) + drain(1)
    s["coalesce_unique"] = cfg() + raw(0, pkt(SUBMIT_JOB, "f0", "u0", "a")) + connect(2) + \
        raw(2, pkt(SUBMIT_JOB, "f0", "u0", "b") + pkt(GET_STATUS_UNIQUE, "u0")) + \
        raw(3, b"") + connect(3) + raw(3, pkt(SUBMIT_JOB_BG, "f0", "u0", "c")) + op(0, 9) + \
        raw(1, pkt(CAN_DO, "f0") + pkt(GRAB_JOB) + pkt(WORK_COMPLETE, H1, "x")) + drain(2)
    s["reduce_grab_all"] = cfg() + raw(0, pkt(SUBMIT_REDUCE_JOB, "f0", "u", "red", "agg", "d") +
                                       pkt(SUBMIT_REDUCE_JOB_BACKGROUND, "f0", "", "r2", "", "e")) + \
        raw(1, pkt(CAN_DO, "f0") + pkt(GRAB_JOB_ALL) + pkt(GRAB_JOB_ALL)) + drain(1)
    s["exceptions"] = cfg() + raw(0, pkt(OPTION_REQ, "exceptions") + pkt(SUBMIT_JOB, "f0", "", "x")) + \
        connect(2) + raw(2, pkt(SUBMIT_JOB, "f0", "-", "x")) + \
        raw(1, pkt(CAN_DO, "f0") + pkt(GRAB_JOB) + pkt(WORK_EXCEPTION, H1, "boom")) + \
        drain(0) + drain(2)
    s["admin_commands"] = cfg() + raw(0, pkt(SUBMIT_JOB_BG, "f0", "u0", "a") +
                                      pkt(SUBMIT_JOB_HIGH_BG, "f1", "", "b")) + \
        raw(1, pkt(SET_CLIENT_ID, "me") + pkt(CAN_DO, "f0")) + \
        raw(2, b"") + connect(2) + \
        raw(2, b"status\nworkers\nprioritystatus\nshow jobs\nshow unique jobs\nversion\n"
               b"maxqueue f0 1\ncreate function f3\ndrop function f3\ndrop function f0\n"
               b"cancel job H:f:2\ngetpid\nverbose\nbogus\n\n") + drain(2)
    s["admin_dump"] = cfg() + raw(0, pkt(SUBMIT_JOB_BG, "f0", "u0", "a\0b") +
                                  pkt(SUBMIT_JOB_EPOCH, "f1", "u1", "1999999999", "later") +
                                  pkt(SUBMIT_JOB, "f0", "u2", "fg")) + \
        raw(1, b"dump\ndump next-id\ndump x\n") + drain(1) + raw(2, b"dump\n") + drain(2) + \
        raw(1, b'load {"type":"job","id":1,"func":"f0","unique":"u9","payload_b64":"eA==",'
               b'"meta":{"after":[1]}}\nload {"type":"job","id":2,"func":"f0","unique":"u0",'
               b'"payload_b64":""}\nload {"type":"record","kind":1,"key":"k","value_b64":""}\n'
               b'load {"type":"job","id":3,"func":"f1","when":1999999999,"payload_b64":""}\n'
               b'load nonsense\n') + drain(1)
    s["retry_dead_letter"] = cfg() + raw(0, b"show failed jobs\nretry f0 1 0 0\nretry f1 2 1 3\nretry list\n") + \
        raw(1, pkt(SUBMIT_JOB_BG, "f0", "u0", "a") + pkt(SUBMIT_JOB_BG, "f1", "u1", "b")) + \
        raw(2, pkt(CAN_DO, "f0") + pkt(CAN_DO_TIMEOUT, "f1", "1") + pkt(GRAB_JOB) +
            pkt(WORK_FAIL, H1)) + clock(1) + \
        raw(2, pkt(GRAB_JOB) + pkt(WORK_EXCEPTION, H1, "boom") + pkt(GRAB_JOB)) + clock(4) + \
        raw(0, b"show failed jobs\nshow jobs\nretry job all f0\nstats\n") + \
        raw(2, pkt(GRAB_JOB) + pkt(WORK_FAIL, H1)) + clock(4) + \
        raw(0, b"retry job H:f:1\nsubmit f0 x\npurge failed f0\npurge failed\nretry f0 0 0\n") + \
        drain(0) + drain(1) + drain(2)
    s["dependencies"] = cfg() + \
        raw(0, b"submit f0 a\nsubmit f1 --after H:f:1 b\nsubmit f2 --after H:f:1,H:f:2 c\n"
               b"submit f3 --after H:f:9 d\nshow jobs\nstats\n") + drain(0) + \
        raw(1, pkt(CAN_DO, "f0") + pkt(CAN_DO, "f1") + pkt(CAN_DO, "f2") + pkt(GRAB_JOB) +
            pkt(WORK_COMPLETE, H1, "") + pkt(GRAB_JOB) + pkt(WORK_FAIL, "H:f:2")) + drain(1) + \
        raw(0, b"show failed jobs\npurge failed\nshow jobs\n") + drain(0)
    s["schedules"] = cfg() + \
        raw(0, b"schedule add s1 @every 2s f0 --nohaste p\nschedule add s2 */5 * * * * f1 "
               b"--unique u --priority low x y\nschedule list\nschedule add s1 99 * * * * f p\n") + \
        drain(0) + raw(1, pkt(CAN_DO, "f0") + pkt(PRE_SLEEP)) + clock(6) + clock(6) + drain(1) + \
        raw(1, pkt(GRAB_JOB)) + drain(1) + raw(0, b"schedule remove s2\nschedule list\n") + \
        drain(0)
    s["broadcast"] = cfg() + raw(0, b"broadcast f0 on\nbroadcast f1 on\nbroadcast list\n") + \
        raw(1, pkt(CAN_DO, "f0") + pkt(CAN_DO, "f1") + pkt(PRE_SLEEP)) + \
        raw(2, pkt(CAN_DO, "f0")) + \
        raw(0, pkt(SUBMIT_JOB_BG, "f0", "", "a") + pkt(SUBMIT_JOB, "f0", "", "fg") +
            pkt(SUBMIT_JOB_BG, "f1", "", "b")) + drain(1) + \
        raw(1, pkt(GRAB_JOB) + pkt(WORK_COMPLETE, "H:f:4", "") + pkt(CANT_DO, "f1") +
            pkt(GRAB_JOB)) + raw(0, b"broadcast f0 off\nbroadcast list\nstats\n") + \
        drain(0) + drain(1) + drain(2)
    s["drop_function_with_jobs"] = cfg() + raw(0, pkt(SUBMIT_JOB_BG, "f2", "", "a")) + \
        raw(0, b"drop function f2\nstatus\n") + drain(0)
    s["malformed_packets"] = cfg(packet=1) + raw(0, pkt(0, "x") + pkt(CMD_MAX, "x") +
                                                 pkt(0x80000000, "") + pkt(0xffffffff, "")) + \
        raw(0, pkt(SUBMIT_JOB, "f0") + pkt(SUBMIT_JOB, size=0) + pkt(ECHO_REQ, "e" * 100) +
            pkt(ECHO_REQ, "ok") + pkt(ECHO_REQ, "r", magic=b"\0RES")) + drain(0) + \
        raw(1, b"\0RXX garbage") + raw(2, b"") + drain(1)
    s["size_declared_never_sent"] = cfg(packet=2) + raw(0, pkt(SUBMIT_JOB, size=0x40000000)) + \
        raw(0, b"a" * 200) + drain(0) + op(0, 9)
    s["long_admin_line"] = cfg(line=1) + raw(0, b"s" * 100 + b"\nstatus\n") + drain(0) + \
        raw(1, b"w" * 40) + raw(1, b"x" * 40 + b"\nversion\n") + drain(1)
    s["slow_reader"] = cfg(output=1) + raw(0, pkt(SUBMIT_JOB, "f0", "", "x")) + \
        raw(1, pkt(CAN_DO, "f0") + pkt(GRAB_JOB) + pkt(WORK_DATA, H1, "d" * 200) +
            pkt(WORK_DATA, H1, "d" * 200) + pkt(WORK_DATA, H1, "d" * 200) +
            pkt(WORK_COMPLETE, H1, "end")) + drain(1) + raw(1, b"status\n") + drain(1)
    s["half_close"] = cfg() + raw(0, pkt(SUBMIT_JOB, "f0", "", "x") + pkt(ECHO_REQ, "e")) + \
        op(0, 10) + op(0, 13, 5) + drain(0) + raw(1, pkt(CAN_DO, "f0") + pkt(GRAB_JOB)) + drain(1)
    s["split_header"] = cfg() + op(0, 5, SUBMIT_JOB_BG, 0, 1, 3, 0x0a, ord("x"), 0, 0, 0, 0, 0) + \
        op(0, 7, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1) + drain(0)
    s["cancel_queued_and_running"] = cfg() + raw(0, pkt(SUBMIT_JOB_BG, "f0", "u0", "a") +
                                                 pkt(SUBMIT_JOB, "f0", "u2", "c")) + \
        raw(0, pkt(SUBMIT_JOB_BG, "f0", "u2", "d")) + \
        raw(1, pkt(CAN_DO, "f0") + pkt(GRAB_JOB)) + raw(0, b"cancel job H:f:1\ncancel job H:f:2\n") + \
        raw(1, pkt(WORK_COMPLETE, H1, "x")) + drain(0) + drain(1)
    s["shutdown_graceful"] = cfg() + raw(0, pkt(SUBMIT_JOB_BG, "f0", "", "a")) + \
        raw(1, pkt(CAN_DO, "f0") + pkt(GRAB_JOB)) + raw(0, b"shutdown graceful\n") + \
        raw(1, pkt(GRAB_JOB) + pkt(WORK_COMPLETE, H1, "x")) + drain(1)
    s["built_ops_mix"] = cfg(retries=0, wakeup=2, exceptions=1) + bytes(
        [0x02, 18, 0, 1, 3, 0x10, ord("p"), 0x12, 1, 0x12, 9, 0, 0x1c, 0x12, 13, 0, 2, 0x10,
         ord("r"), 0x0b, 0x40, 0x0c, 0x1c, 0x16, 0, 0, 0x0c])
    s["maxqueue_full"] = cfg() + raw(0, b"create function f1\nmaxqueue f1 1\n" +
                                     pkt(SUBMIT_JOB_BG, "f1", "", "a") +
                                     pkt(SUBMIT_JOB_BG, "f1", "", "b") +
                                     pkt(SUBMIT_JOB_HIGH, "f1", "", "c")) + drain(0)
    big = "D" * 3000
    s["shared_forward_to_many_clients"] = cfg() + raw(0, pkt(SUBMIT_JOB, "f0", "u0", "x")) + \
        connect(2) + raw(2, pkt(SUBMIT_JOB, "f0", "u0", "x")) + connect(3) + \
        raw(3, pkt(SUBMIT_JOB, "f0", "u0", "x")) + raw(1, pkt(CAN_DO, "f0") + pkt(GRAB_JOB)) + \
        raw(1, pkt(WORK_DATA, H1, big) + pkt(WORK_COMPLETE, H1, big)) + op(2, 13, 100) + \
        op(3, 9) + drain(0) + drain(2)
    for n in (1, 2, 3, 5, 8, 13):
        s["oom_%d" % n] = cfg() + op(0, 15, 2 * n - 1) + \
            raw(0, pkt(SUBMIT_JOB, "f0", "u0", "x") + pkt(SUBMIT_JOB_BG, "f1", "", "y")) + \
            op(1, 15, 2 * n - 1) + raw(1, pkt(SET_CLIENT_ID, "w") + pkt(CAN_DO, "f0") +
                                       pkt(CAN_DO, "f1") + pkt(GRAB_JOB) + pkt(GRAB_JOB)) + \
            op(0, 15, 2 * n - 1) + raw(0, b"show jobs\nstatus\n") + drain(0) + drain(1) + \
            op(1, 15, 2 * n - 1) + raw(1, pkt(WORK_COMPLETE, H1, "r") + pkt(WORK_DATA, H2, "z")) + \
            op(1, 9) + drain(0)
    s["bulk_listing_spans_iterations"] = cfg() + op(0, 4, 0xfc) + \
        raw(1, b"show jobs\nstatus\n" + pkt(ECHO_REQ, "after")) + op(1, 13, 200) + \
        raw(1, b"show unique jobs\n") + drain(1) + drain(1) + op(1, 13, 255) + drain(1) + \
        raw(2, b"") + connect(2) + raw(2, pkt(CAN_DO, "f0") + pkt(GRAB_JOB)) + drain(1)
    return s


# ---------------------------------------------------------------- fuzz_store_row
# byte 0 < 128: byte 1 is --max-function-name, else 512; then seven columns (id, prio, run_at,
# func, unique, reducer, data), each a type byte (1 int, 2 float, 3 text, 4 blob, 5 NULL, else
# invalid) and then, for an int, a byte < 64 choosing an edge value or >= 64 followed by 8 bytes;
# for text or bytes, a 2-byte length, a byte (0xff: 70000 copies of the next byte instead) and
# the bytes.
def col_int(v):
    return bytes([1, 64]) + struct.pack(">q", v)


def col_bytes(data, kind=4):
    return bytes([kind]) + struct.pack(">H", len(data)) + b"\0" + data


def store_row_seeds():
    def row(i, prio, when, func, uniq=b"", red=b"", data=b"", head=b"\xff"):
        return (head + col_int(i) + col_int(prio) + col_int(when) + col_bytes(func)
                + col_bytes(uniq) + col_bytes(red) + col_bytes(data))
    return {
        "valid": row(10, 1, 0, b"reverse", b"u1", b"", b"payload"),
        "valid-text-reducer": row(11, 0, 1700000000, b"f", b"", b"sum", b"x" * 40),
        "prio-out-of-range": row(12, 7, 0, b"f"),
        "prio-negative": row(13, -1, 0, b"f"),
        "empty-function": row(14, 1, 0, b""),
        "nul-in-function": row(15, 1, 0, b"a\0b"),
        "long-unique": row(16, 1, 0, b"f", b"u" * 65),
        "short-max-function": row(17, 1, 0, b"function", head=b"\x00\x04"),
        "id-too-large": row(2 ** 62 + 1, 1, 0, b"f"),
        "null-data": row(18, 1, 0, b"f")[:-(3 + 0)] + bytes([5]),
    }


TARGETS = {
    "fuzz_proto_bin": proto_bin_seeds,
    "fuzz_proto_admin": proto_admin_seeds,
    "fuzz_connection": connection_seeds,
    "fuzz_store_row": store_row_seeds,
}


# ---------------------------------------------------------------- fuzz_http
# operations: one code byte (slot << 4 | op); see fuzz_http.c. request(): method, path, header
# bits, flags, body length (u16), body.

def http_open(slot):
    return bytes([slot << 4 | 0])


def http_request(slot, method, path, hdrs, flags, body):
    return (bytes([slot << 4 | 3, method, path, hdrs, flags]) + struct.pack(">H", len(body))
            + body)


def http_raw(slot, data):
    return bytes([slot << 4 | 1, len(data)]) + data


def http_worker(what, result, chunks=()):
    out = bytes([8, what | len(chunks) << 4])
    for c in chunks:
        out += bytes([len(c)]) + c
    return out + bytes([len(result)]) + result


def http_seeds():
    return {
        "healthz": http_open(0) + http_request(0, 0, 0, 0, 0, b""),
        "background": http_open(0) + http_request(0, 1, 1, 0x01, 0, b"payload"),
        "foreground-complete": http_open(1) + http_request(1, 1, 1, 0x10, 0, b"in")
        + http_worker(0, b"done", (b"ab", b"c")),
        "foreground-fail-exception": http_open(0) + http_request(0, 1, 2, 0, 0, b"x")
        + http_request(0, 2, 2, 0, 2, b"chunked") + http_worker(1, b"") + http_worker(2, b"oops"),
        "client-gone": http_open(2) + http_request(2, 1, 1, 0, 0, b"q") + bytes([2 << 4 | 6])
        + http_worker(0, b"late"),
        "replay": bytes([10]) + http_open(0) + http_request(0, 1, 1, 0x01, 0, b"r") + bytes([10]),
        "garbage": http_open(3) + http_raw(3, b"HELLO\r\n\r\n") + http_open(1)
        + http_raw(1, b"POST /f HTTP/1.1\r\nContent-Length: 99999\r\n\r\n"),
    }


TARGETS["fuzz_http"] = http_seeds


# ---------------------------------------------------------------- fuzz_tls
# byte 0: even = handshake, then application data (size byte, record, size byte, record...; the
# server's read sizes come from the same bytes); odd = raw bytes into the handshake. See
# fuzz_tls.c.

def tls_seeds():
    app = (pkt(1, b"f") + pkt(7, b"f", b"u", b"data") + pkt(9) + b"status\nworkers\nversion\n"
           + pkt(16, b"x" * 100))
    hello = b"\x16\x03\x01\x00\x30\x01\x00\x00\x2c\x03\x03" + b"\0" * 40
    return {
        "app": b"\0" + bytes([4]) + app,
        "app-small-records": b"\x02" + b"".join(bytes([0]) + app[i:i + 1]
                                                  for i in range(0, 40)),
        "plaintext-packet": b"\x01" + pkt(16, b"hi"),
        "plaintext-admin": b"\x01status\n",
        "short-client-hello": b"\x01" + hello,
    }


TARGETS["fuzz_tls"] = tls_seeds


# ---------------------------------------------------------------- fuzz_dump_line
# one dump line (see fuzz_dump_line.c and src/util/dumpfmt.h)

def dump_line_seeds():
    return {
        "header": b'{"spur_dump":1,"created":1700000000,"server":"H:x"}\n',
        "job": b'{"type":"job","id":5,"func":"f","unique":"u","reducer":"","priority":"high",'
               b'"when":0,"payload_b64":"YQBi"}\n',
        "job-b64": b'{"type":"job","id":6,"func_b64":"/w==","unique_b64":"/v8=","reducer":"r",'
                   b'"priority":"low","when":1700000000,"payload_b64":""}\n',
        "job-meta": b'{"type":"job","id":7,"func":"f","payload_b64":"eA==",'
                    b'"meta":{"after":[1,3,4],"state":"waiting"}}\n',
        "record": b'{"type":"record","kind":1,"key":"nightly","value_b64":"e30="}\n',
        "end": b'{"type":"end","jobs":2,"records":1}\n',
        "escapes": b'{"type":"job","id":8,"func":"f\\u00e9\\n\\"","payload_b64":""}',
    }


TARGETS["fuzz_dump_line"] = dump_line_seeds


def main():
    check = "--check" in sys.argv[1:]
    bad = 0
    for target, make in TARGETS.items():
        d = os.path.join(HERE, "corpus", target)
        os.makedirs(d, exist_ok=True)
        for name, data in sorted(make().items()):
            path = os.path.join(d, "seed-" + name)
            if check:
                if not os.path.exists(path) or open(path, "rb").read() != data:
                    print("differs or missing:", path)
                    bad = 1
                continue
            with open(path, "wb") as f:
                f.write(data)
        if not check:
            print(f"{target}: {len(make())} seeds in {d}")
    return bad


if __name__ == "__main__":
    sys.exit(main())
