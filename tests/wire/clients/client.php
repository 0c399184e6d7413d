<?php
// SPDX-License-Identifier: BSD-3-Clause
// A php-gearman (pecl) client: foreground, background, high priority, status, and a task set.
[$_, $host, $port] = $argv;
$c = new GearmanClient();
$c->addServer($host, (int)$port);
$c->setTimeout(10000);
echo $c->doNormal('upper', 'hello'), "\n";
echo $c->doHigh('upper', 'high'), "\n";
$h = $c->doBackground('upper', 'bg');
echo ($c->returnCode() == GEARMAN_SUCCESS && strlen($h) > 0) ? "BG OK\n" : "BG FAILED\n";
$results = [];
$c->setCompleteCallback(function (GearmanTask $t) use (&$results) { $results[] = $t->data(); });
foreach (['a', 'b', 'c'] as $x) {
    $c->addTask('upper', $x);
}
if (!$c->runTasks()) {
    echo "TASKS FAILED: ", $c->error(), "\n";
}
sort($results);
echo implode(',', $results), "\n";
