<?php
// SPDX-License-Identifier: BSD-3-Clause
// A php-gearman (pecl) worker that uppercases its input; exits after N jobs.
[$_, $host, $port, $count] = $argv;
$w = new GearmanWorker();
$w->addServer($host, (int)$port);
$w->setTimeout(10000);
$w->addFunction('upper', function (GearmanJob $job) { return strtoupper($job->workload()); });
for ($i = 0; $i < (int)$count; $i++) {
    if (!$w->work()) {
        fwrite(STDERR, "work failed: " . $w->error() . "\n");
        exit(1);
    }
}
