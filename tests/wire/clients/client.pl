#!/usr/bin/perl
# SPDX-License-Identifier: BSD-3-Clause
# A Gearman::Client that submits foreground and background jobs and prints the results.
use strict;
use warnings;
use Gearman::Client;

my ($server, @words) = @ARGV;
my $client = Gearman::Client->new(job_servers => [$server]);
for my $w (@words) {
    my $res = $client->do_task(reverse => $w, {timeout => 10});
    print defined $res ? "$$res\n" : "FAILED\n";
}
my $handle = $client->dispatch_background(reverse => "background");
print defined $handle ? "BG OK\n" : "BG FAILED\n";
