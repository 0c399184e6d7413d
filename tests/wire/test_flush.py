"""When replies are written: a client waiting on several jobs gets its replies batched while more
input is ready, but never later than the moment the server runs out of input (conn.h)."""
from gearman_wire import (CAN_DO, GRAB_JOB, JOB_ASSIGN, JOB_CREATED, SUBMIT_JOB, WORK_COMPLETE,
                          packet)


def test_result_reaches_a_client_with_more_jobs_in_flight(server):
    c = server.connect()
    c.send(b"".join(packet(SUBMIT_JOB, b"flush-f", b"", b"%d" % i) for i in range(3)))
    handles = [c.expect(JOB_CREATED) for _ in range(3)]
    w = server.connect()
    w.send_packet(CAN_DO, b"flush-f")
    w.send_packet(GRAB_JOB)
    h, _, data = w.expect(JOB_ASSIGN).split(b"\0", 2)
    assert (h, data) == (handles[0], b"0")
    w.send_packet(WORK_COMPLETE, h, b"r0")
    # two jobs still in flight, and nothing else to read: the result must not wait for them
    assert c.expect(WORK_COMPLETE, timeout=1) == h + b"\0r0"
    c.assert_silent(0.1)


def test_every_reply_arrives_once_and_in_order_per_job(server):
    jobs = 500
    c = server.connect()
    w = server.connect()
    w.send_packet(CAN_DO, b"flush-g")
    c.send(b"".join(packet(SUBMIT_JOB, b"flush-g", b"", b"%d" % i) for i in range(jobs)))
    # the worker pipelines: each completion carries the next GRAB
    w.send_packet(GRAB_JOB)
    for i in range(jobs):
        h, _, data = w.expect(JOB_ASSIGN).split(b"\0", 2)
        assert data == b"%d" % i
        w.send(packet(WORK_COMPLETE, h, b"r" + data) + packet(GRAB_JOB))
    created, done = {}, {}
    for n in range(2 * jobs):
        magic, cmd, body = c.read_packet()
        if cmd == JOB_CREATED:
            assert body not in created
            created[body] = n
        else:
            assert cmd == WORK_COMPLETE
            h, result = body.split(b"\0", 1)
            assert h in created, "JOB_CREATED comes before the job's result"
            assert h not in done
            done[h] = result
    assert len(done) == jobs
    assert sorted(done.values()) == sorted(b"r%d" % i for i in range(jobs))
