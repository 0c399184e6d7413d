#!/usr/bin/perl
# SPDX-License-Identifier: BSD-3-Clause
# A Gearman::Client with a prefix that submits foreground jobs and prints the results.
use strict;
use warnings;
use Gearman::Client;

my ($server, $prefix, @words) = @ARGV;
my $client = Gearman::Client->new(job_servers => [$server], prefix => $prefix);
for my $w (@words) {
    my $res = $client->do_task(reverse => $w, {timeout => 10});
    print defined $res ? "$$res\n" : "FAILED\n";
}
