import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { containerSamples, type EngineStats } from '../../agent/collect/containers.ts';
import { parseCrontab, timerSchedule } from '../../agent/collect/cron.ts';
import { defaultRouteInterface, parseOsRelease } from '../../agent/collect/facts.ts';
import { parseIptablesSave, parseNftRuleset } from '../../agent/collect/firewall.ts';
import { parseNvidiaSmi } from '../../agent/collect/gpu.ts';
import { parseProcModules } from '../../agent/collect/kernel-modules.ts';
import { parseDiskstats, parseNetDev, realFilesystems } from '../../agent/collect/metrics.ts';
import { parseDpkgStatus, parseRpmList } from '../../agent/collect/packages.ts';
import { formatIpv6, isOffered, parseNetSockets } from '../../agent/collect/ports.ts';
import { parsePostgresqlConf, parseResp, parseRespReplies, pgValue, RespError } from '../../agent/collect/probes.ts';
import { parseProcStat, parseProcStatFile, processName, ProcessCpuTracker } from '../../agent/collect/processes.ts';
import { collectSecurityItems } from '../../agent/collect/security.ts';
import { parseSystemctlShow, parseUnitList, unitFileEnabled } from '../../agent/collect/services.ts';
import { buildUsers, parseGroup, parsePasswd } from '../../agent/collect/users.ts';

/**
 * The agent's collectors, their parsers on fixtures: pure code, no machine state (collectors.test.ts checks the
 * collectors against this machine and its services).
 */

// ---------------------------------------------------------------------------------------------------------------
// Parsers on fixtures: the shapes real files have, including the awkward lines.

describe('parsers', () => {
  it('dpkg status: installed and held packages only, first description line, Installed-Size in KiB', () => {
    const text = [
      'Package: bash',
      'Essential: yes',
      'Status: install ok installed',
      'Installed-Size: 7164',
      'Architecture: amd64',
      'Version: 5.2.15-2+b7',
      'Description: GNU Bourne Again SHell',
      ' Bash is an sh-compatible command language interpreter that executes',
      ' .',
      ' commands read from the standard input or from a file.',
      '',
      'Package: removed-but-configured',
      'Status: deinstall ok config-files',
      'Architecture: amd64',
      'Version: 1.0',
      '',
      'Package: held',
      'Status: hold ok installed',
      'Architecture: all',
      'Version: 2:1.2-3',
      'Description: a held package',
      '',
      'Package: half',
      'Status: install reinstreq half-installed',
      'Version: 0.1',
    ].join('\n');
    expect(parseDpkgStatus(text)).toEqual([
      {
        name: 'bash',
        version: '5.2.15-2+b7',
        architecture: 'amd64',
        manager: 'dpkg',
        description: 'GNU Bourne Again SHell',
        installed_size_bytes: 7164 * 1024,
      },
      {
        name: 'held',
        version: '2:1.2-3',
        architecture: 'all',
        manager: 'dpkg',
        description: 'a held package',
        installed_size_bytes: null,
      },
    ]);
  });

  it('rpm -qa output', () => {
    expect(
      parseRpmList(
        'bash\t5.1.8-9.el9\tx86_64\t7738634\tThe GNU Bourne Again shell\ngpg-pubkey\tabc-def\t(none)\t0\tgpg(key)\n',
      ),
    ).toEqual([
      {
        name: 'bash',
        version: '5.1.8-9.el9',
        architecture: 'x86_64',
        manager: 'rpm',
        description: 'The GNU Bourne Again shell',
        installed_size_bytes: 7738634,
      },
      {
        name: 'gpg-pubkey',
        version: 'abc-def',
        architecture: '',
        manager: 'rpm',
        description: 'gpg(key)',
        installed_size_bytes: 0,
      },
    ]);
  });

  it('user crontab: comments, env lines and blank lines skipped; @keywords; the command keeps its spacing', () => {
    const text = [
      '# m h dom mon dow command',
      'MAILTO=ops@example.com',
      'PATH = /usr/bin:/bin',
      '',
      '*/5 * * * * /usr/local/bin/backup.sh  --fast',
      '@reboot   /opt/app/start.sh',
      '#0 1 * * * disabled.sh',
      '0 2 * *',
    ].join('\n');
    expect(parseCrontab(text, 'crontab:alice', 'alice')).toEqual([
      {
        username: 'alice',
        schedule: '*/5 * * * *',
        command: '/usr/local/bin/backup.sh  --fast',
        source: 'crontab:alice',
        is_active: true,
      },
      {
        username: 'alice',
        schedule: '@reboot',
        command: '/opt/app/start.sh',
        source: 'crontab:alice',
        is_active: true,
      },
    ]);
  });

  it('system crontab and cron.d: the sixth column is the user', () => {
    const text = [
      'SHELL=/bin/sh',
      '17 *\t* * *\troot    cd / && run-parts --report /etc/cron.hourly',
      '@daily www-data /usr/bin/php /srv/cron.php',
      '30 3 * * 0 root',
    ].join('\n');
    expect(parseCrontab(text, '/etc/crontab', null)).toEqual([
      {
        username: 'root',
        schedule: '17 * * * *',
        command: 'cd / && run-parts --report /etc/cron.hourly',
        source: '/etc/crontab',
        is_active: true,
      },
      {
        username: 'www-data',
        schedule: '@daily',
        command: '/usr/bin/php /srv/cron.php',
        source: '/etc/crontab',
        is_active: true,
      },
    ]);
  });

  it('systemd timer schedule from TimersCalendar / TimersMonotonic', () => {
    expect(
      timerSchedule({ TimersCalendar: '{ OnCalendar=*-*-* 06,18:00:00 ; next_elapse=Thu 2025-01-02 06:00:00 UTC }' }),
    ).toBe('OnCalendar=*-*-* 06,18:00:00');
    expect(
      timerSchedule({
        TimersMonotonic: '{ OnBootUSec=15min ; next_elapse=0 } { OnUnitActiveUSec=1d ; next_elapse=0 }',
      }),
    ).toBe('OnBootUSec=15min; OnUnitActiveUSec=1d');
  });

  it('/proc/net/tcp and tcp6 lines: addresses, ports, states, inodes', () => {
    const tcp = [
      '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
      '   0: 0100007F:18EB 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5199 1 0000000004985b9f 100 0 0 10 0',
      '   1: 0202000A:0016 0102000A:C350 01 00000000:00000000 02:000A7B2C 00000000   106        0 7180 2 0000000013dc9a50 20 4 30 10 -1',
    ].join('\n');
    const t = parseNetSockets('tcp', tcp);
    expect(t).toEqual([
      {
        protocol: 'tcp',
        localAddress: '127.0.0.1',
        localPort: 6379,
        remoteAddress: '0.0.0.0',
        remotePort: 0,
        state: 'LISTEN',
        uid: 0,
        inode: 5199,
      },
      {
        protocol: 'tcp',
        localAddress: '10.0.2.2',
        localPort: 22,
        remoteAddress: '10.0.2.1',
        remotePort: 50000,
        state: 'ESTABLISHED',
        uid: 106,
        inode: 7180,
      },
    ]);
    expect(t.filter(isOffered).map((s) => s.localPort)).toEqual([6379]);
    const tcp6 = [
      '  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
      '   0: 00000000000000000000000001000000:18EB 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5200 1 0000000000000000 100 0 0 10 0',
      '   1: 0000000000000000FFFF00000100007F:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5201 1 0000000000000000 100 0 0 10 0',
      '   2: 000080FE000000000000000001000000:0035 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5202 1 0000000000000000 100 0 0 10 0',
      '   3: 00000000000000000000000000000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5203 1 0000000000000000 100 0 0 10 0',
    ].join('\n');
    expect(parseNetSockets('tcp6', tcp6).map((s) => `${s.localAddress} ${s.localPort}`)).toEqual([
      '::1 6379',
      '::ffff:127.0.0.1 8080',
      'fe80::1 53',
      ':: 80',
    ]);
    const udp = [
      '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops',
      '  1: 00000000:0044 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 1234 2 0000000000000000 0',
    ].join('\n');
    const u = parseNetSockets('udp', udp);
    expect(u).toMatchObject([
      { protocol: 'udp', localAddress: '0.0.0.0', localPort: 68, state: 'UNCONN', inode: 1234 },
    ]);
    expect(u.filter(isOffered)).toHaveLength(1);
  });

  it('IPv6 text form (RFC 5952)', () => {
    const b = (...groups: number[]) => groups.flatMap((g) => [g >> 8, g & 0xff]);
    expect(formatIpv6(b(0x2001, 0xdb8, 0, 0, 1, 0, 0, 1))).toBe('2001:db8::1:0:0:1');
    expect(formatIpv6(b(0x2001, 0xdb8, 0, 1, 1, 1, 1, 1))).toBe('2001:db8:0:1:1:1:1:1');
    expect(formatIpv6(b(0, 0, 0, 0, 0, 0, 0, 0))).toBe('::');
  });

  it('iptables-save: per-table, per-chain rule numbers, targets, protocols, destination ports, quoted comments', () => {
    const text = [
      '# Generated by iptables-save v1.8.9 (nf_tables)',
      '*filter',
      ':INPUT DROP [0:0]',
      ':FORWARD DROP [0:0]',
      ':OUTPUT ACCEPT [0:0]',
      '-A INPUT -i lo -j ACCEPT',
      '-A INPUT -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT',
      '-A INPUT -p tcp -m tcp --dport 22 -m comment --comment "ssh from anywhere" -j ACCEPT',
      '-A INPUT -p tcp -m multiport --dports 80,443 -j ACCEPT',
      '-A FORWARD -j DOCKER-USER',
      'COMMIT',
      '*nat',
      ':POSTROUTING ACCEPT [0:0]',
      '-A POSTROUTING -s 172.17.0.0/16 ! -o docker0 -j MASQUERADE',
      'COMMIT',
    ].join('\n');
    const rules = parseIptablesSave(text);
    expect(rules.map((r) => [r.table_name, r.chain, r.rule_number, r.target, r.protocol, r.port])).toEqual([
      ['filter', 'INPUT', 1, 'ACCEPT', '', ''],
      ['filter', 'INPUT', 2, 'ACCEPT', '', ''],
      ['filter', 'INPUT', 3, 'ACCEPT', 'tcp', '22'],
      ['filter', 'INPUT', 4, 'ACCEPT', 'tcp', '80,443'],
      ['filter', 'FORWARD', 1, 'DOCKER-USER', '', ''],
      ['nat', 'POSTROUTING', 1, 'MASQUERADE', '', ''],
    ]);
    expect(rules[2]).toMatchObject({
      tool: 'iptables',
      rule_text: '-A INPUT -p tcp -m tcp --dport 22 -m comment --comment "ssh from anywhere" -j ACCEPT',
    });
  });

  it('nft list ruleset: rules inside chains only; verdicts, protocols and port sets', () => {
    const text = [
      'table inet filter {',
      '\tset blocked {',
      '\t\ttype ipv4_addr',
      '\t\telements = { 10.0.0.1 }',
      '\t}',
      '\tchain input {',
      '\t\ttype filter hook input priority filter; policy drop;',
      '\t\tct state established,related accept',
      '\t\tiif "lo" accept',
      '\t\ttcp dport 22 accept',
      '\t\ttcp dport { 80, 443 } counter packets 0 bytes 0 accept',
      '\t\tip saddr @blocked drop',
      '\t}',
      '\tchain forward {',
      '\t\ttype filter hook forward priority filter; policy drop;',
      '\t\tjump docker-user',
      '\t}',
      '}',
    ].join('\n');
    const rules = parseNftRuleset(text);
    expect(rules.map((r) => [r.table_name, r.chain, r.rule_number, r.target, r.protocol, r.port])).toEqual([
      ['inet filter', 'input', 1, 'accept', '', ''],
      ['inet filter', 'input', 2, 'accept', '', ''],
      ['inet filter', 'input', 3, 'accept', 'tcp', '22'],
      ['inet filter', 'input', 4, 'accept', 'tcp', '80,443'],
      ['inet filter', 'input', 5, 'drop', '', ''],
      ['inet filter', 'forward', 1, 'jump docker-user', '', ''],
    ]);
    expect(rules.every((r) => r.tool === 'nftables')).toBe(true);
  });

  it('/proc/modules', () => {
    const text = [
      'nf_tables 344064 0 - Live 0x0000000000000000',
      'ext4 1024000 2 - Live 0x0000000000000000',
      'mbcache 16384 1 ext4, Live 0x0000000000000000',
      'jbd2 192512 1 ext4,nft_x, Live 0x0000000000000000',
    ].join('\n');
    expect(parseProcModules(text)).toEqual([
      { name: 'nf_tables', size_bytes: 344064, instances: 0, used_by: [] },
      { name: 'ext4', size_bytes: 1024000, instances: 2, used_by: [] },
      { name: 'mbcache', size_bytes: 16384, instances: 1, used_by: ['ext4'] },
      { name: 'jbd2', size_bytes: 192512, instances: 1, used_by: ['ext4', 'nft_x'] },
    ]);
  });

  it('/proc/[pid]/stat with spaces and parentheses in the name; process name past the 15-character comm', () => {
    const s = parseProcStat(
      '4242 (my (odd) app) S 1 4242 4242 0 -1 4194560 300 0 0 0 150 50 0 0 20 0 7 0 123456 10485760 2560 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0',
    );
    expect(s).toEqual({
      pid: 4242,
      comm: 'my (odd) app',
      state: 'S',
      ppid: 1,
      utime: 150,
      stime: 50,
      threads: 7,
      starttime: 123456,
      vsize: 10485760,
      rssPages: 2560,
    });
    expect(processName('victoria-metric', ['/usr/bin/victoria-metrics', '-httpListenAddr=:8428'])).toBe(
      'victoria-metrics',
    );
    expect(processName('node', ['/usr/bin/node', 'x.js'])).toBe('node');
  });

  it('CPU share per process between two samples, 100 = one core; a recycled pid starts over', () => {
    const times = (total: number) => ({
      total: { busy: 0, total, iowait: 0 },
      perCpu: new Map([
        ['cpu0', { busy: 0, total: total / 2, iowait: 0 }],
        ['cpu1', { busy: 0, total: total / 2, iowait: 0 }],
      ]),
      btime: 0,
    });
    const st = (pid: number, ticks: number, start = 1) => ({
      pid,
      comm: 'x',
      state: 'R',
      ppid: 1,
      utime: ticks,
      stime: 0,
      threads: 1,
      starttime: start,
      vsize: 0,
      rssPages: 0,
    });
    const tracker = new ProcessCpuTracker();
    tracker.update(
      new Map([
        [1, st(1, 100)],
        [2, st(2, 0)],
      ]),
      times(1000),
    );
    // 200 jiffies over 2 cores = 100 ticks of wall time; process 1 used 50 of them, process 2 (recycled) is new.
    const pct = tracker.update(
      new Map([
        [1, st(1, 150)],
        [2, st(2, 80, 99)],
      ]),
      times(1200),
    );
    expect(pct.get(1)).toBe(50);
    expect(pct.get(2)).toBe(0);
  });

  it('/proc/stat, os-release, default route', () => {
    const stat = parseProcStatFile(
      'cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 50 0 25 400 25 0 0 0 0 0\ncpu1 50 0 25 400 25 0 0 0 0 0\nbtime 1700000000\n',
    );
    expect(stat.total).toEqual({ busy: 150, total: 1000, iowait: 50 });
    expect(stat.perCpu.size).toBe(2);
    expect(stat.btime).toBe(1700000000);
    expect(parseOsRelease('NAME="Debian GNU/Linux"\nVERSION_ID="12"\nID=debian\n# comment\n')).toEqual({
      NAME: 'Debian GNU/Linux',
      VERSION_ID: '12',
      ID: 'debian',
    });
    const route = [
      'Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT',
      'wlan0\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0',
      'eth0\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0',
      'eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0',
    ].join('\n');
    expect(defaultRouteInterface(route)).toBe('eth0');
    expect(defaultRouteInterface(route.split('\n').slice(0, 1).join('\n'))).toBeNull();
  });

  it('passwd and group: primary and supplementary groups, system accounts', () => {
    const passwd = parsePasswd(
      'root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\nalice:x:1000:1000:Alice,,,:/home/alice:/bin/zsh\n+::::::\nbroken:x:abc\n',
    );
    const groups = parseGroup('root:x:0:\nsudo:x:27:alice\nalice:x:1000:\ndocker:x:999:alice,bob\nnogroup:x:65534:\n');
    expect(buildUsers(passwd, groups)).toEqual([
      {
        username: 'root',
        uid: 0,
        gid: 0,
        home: '/root',
        shell: '/bin/bash',
        gecos: 'root',
        is_system: true,
        groups: ['root'],
      },
      {
        username: 'nobody',
        uid: 65534,
        gid: 65534,
        home: '/nonexistent',
        shell: '/usr/sbin/nologin',
        gecos: 'nobody',
        is_system: true,
        groups: ['nogroup'],
      },
      {
        username: 'alice',
        uid: 1000,
        gid: 1000,
        home: '/home/alice',
        shell: '/bin/zsh',
        gecos: 'Alice,,,',
        is_system: false,
        groups: ['alice', 'sudo', 'docker'],
      },
    ]);
  });

  it('systemctl show / list output and unit file states', () => {
    const blocks = parseSystemctlShow(
      'Id=ssh.service\nDescription=OpenBSD Secure Shell server\nLoadState=loaded\nActiveState=active\nSubState=running\nUnitFileState=enabled\nMainPID=812\n\nId=cron.service\nMainPID=0\nUnitFileState=static\n',
    );
    expect(blocks).toEqual([
      {
        Id: 'ssh.service',
        Description: 'OpenBSD Secure Shell server',
        LoadState: 'loaded',
        ActiveState: 'active',
        SubState: 'running',
        UnitFileState: 'enabled',
        MainPID: '812',
      },
      { Id: 'cron.service', MainPID: '0', UnitFileState: 'static' },
    ]);
    expect(
      parseUnitList(
        'ssh.service loaded active running OpenBSD Secure Shell server\n● foo.service not-found inactive dead foo.service\nsshd.socket x\n',
      ).map((u) => u.name),
    ).toEqual(['ssh.service', 'foo.service']);
    expect([
      unitFileEnabled('enabled'),
      unitFileEnabled('disabled'),
      unitFileEnabled('masked'),
      unitFileEnabled('static'),
      unitFileEnabled(undefined),
    ]).toEqual([true, false, false, null, null]);
  });

  it('diskstats, net/dev, mounts', () => {
    expect(
      parseDiskstats(
        ' 254       0 vda 62018 12953 2646058 18005 32775 39892 5087720 24008 0 11692 42880 10140 41 771424 638 6525 227',
      ).get('vda'),
    ).toEqual({ read: 2646058 * 512, written: 5087720 * 512 });
    const dev =
      'Inter-|   Receive\n face |bytes    packets\n    lo:  185549    1124    0    0    0     0          0         0   185549    1124    0    0    0     0       0          0\n  eth0: 475999266   10891    0    0    0     0          0         0   938280    7247    0    0    0     0       0          0';
    expect(parseNetDev(dev).get('eth0')).toEqual({ rx: 475999266, tx: 938280 });
    const mounts = [
      'proc /proc proc rw 0 0',
      '/dev/vda / ext4 rw 0 0',
      '/dev/vda /etc/hosts ext4 rw 0 0',
      '/dev/sdb1 /mnt/my\\040disk xfs rw 0 0',
      '/dev/loop3 /snap/core/1 squashfs ro 0 0',
      'tank/data /tank/data zfs rw 0 0',
      'tmpfs /run tmpfs rw 0 0',
    ].join('\n');
    expect(realFilesystems(mounts)).toEqual([
      { device: '/dev/vda', mountpoint: '/', fstype: 'ext4' },
      { device: '/dev/sdb1', mountpoint: '/mnt/my disk', fstype: 'xfs' },
      { device: 'tank/data', mountpoint: '/tank/data', fstype: 'zfs' },
    ]);
  });

  it('postgresql.conf and setting values', () => {
    const conf = parsePostgresqlConf(
      "max_connections = 200\t\t# (change requires restart)\n#shared_buffers = 128MB\nshared_buffers = '1GB'\nlisten_addresses = 'localhost,10.0.0.1' # what IP\nlog_line_prefix = '%m [%p] # x'\n",
    );
    expect(conf).toEqual({
      max_connections: '200',
      shared_buffers: '1GB',
      listen_addresses: 'localhost,10.0.0.1',
      log_line_prefix: '%m [%p] # x',
    });
    expect([pgValue('128MB'), pgValue('100'), pgValue('on'), pgValue('replica'), pgValue('-1')]).toEqual([
      { value: 128, unit: 'MB' },
      { value: 100 },
      { value: true },
      { value: 'replica' },
      { value: -1 },
    ]);
  });

  it('RESP replies, whole and partial', () => {
    const buf = Buffer.from(
      '*2\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n-NOAUTH Authentication required.\r\n:42\r\n$-1\r\n+PONG\r\n',
    );
    expect(parseRespReplies(buf, 5)).toEqual([
      ['maxmemory', '0'],
      new RespError('NOAUTH Authentication required.'),
      42,
      null,
      'PONG',
    ]);
    expect(parseResp(Buffer.from('$10\r\nabc'))).toBeNull();
    expect(parseRespReplies(Buffer.from('+OK\r\n*2\r\n$1\r\na\r\n'), 2)).toBeNull();
  });

  it('nvidia-smi CSV', () => {
    expect(parseNvidiaSmi('0, NVIDIA A100-SXM4-40GB, 535.104.05, 40960, 00000000:07:00.0\n')).toEqual([
      { index: 0, name: 'NVIDIA A100-SXM4-40GB', driver: '535.104.05', memoryMiB: 40960, busId: '00000000:07:00.0' },
    ]);
  });

  it('container samples from engine stats, as docker stats computes them', () => {
    const stats: EngineStats = {
      cpu_stats: { cpu_usage: { total_usage: 2_000_000_000 }, system_cpu_usage: 20_000_000_000, online_cpus: 2 },
      precpu_stats: { cpu_usage: { total_usage: 1_000_000_000 }, system_cpu_usage: 10_000_000_000 },
      memory_stats: { usage: 300 * 2 ** 20, limit: 1024 * 2 ** 20, stats: { inactive_file: 44 * 2 ** 20 } },
      networks: { eth0: { rx_bytes: 1000, tx_bytes: 2000 }, eth1: { rx_bytes: 1, tx_bytes: 2 } },
      blkio_stats: {
        io_service_bytes_recursive: [
          { op: 'read', value: 4096 },
          { op: 'write', value: 8192 },
          { op: 'Read', value: 4096 },
        ],
      },
    };
    const labels = { container_id: 'abc', container_name: 'web' };
    const { samples, mark } = containerSamples(stats, labels);
    const v = Object.fromEntries(samples.map((s) => [s.name, s.value]));
    expect(v).toEqual({
      container_cpu_usage: 20,
      container_memory_used: 256 * 2 ** 20,
      container_memory_limit: 1024 * 2 ** 20,
      container_memory_usage: 25,
      container_network_receive: 1001,
      container_network_transmit: 2002,
      container_block_read: 8192,
      container_block_write: 8192,
    });
    expect(samples.every((s) => s.labels === labels)).toBe(true);
    // One-shot stats have no precpu: the previous reading we kept is the base.
    const next = containerSamples(
      { cpu_stats: { cpu_usage: { total_usage: 2_500_000_000 }, system_cpu_usage: 30_000_000_000, online_cpus: 2 } },
      labels,
      mark!,
    );
    expect(next.samples).toEqual([{ name: 'container_cpu_usage', value: 10, labels }]);
  });

  it('sshd settings: first value wins, Include files, defaults marked, Match blocks ignored', async () => {
    const etc = mkdtempSync(join(tmpdir(), 'agent-etc-'));
    try {
      mkdirSync(join(etc, 'ssh', 'sshd_config.d'), { recursive: true });
      writeFileSync(join(etc, 'ssh', 'sshd_config.d', '10-hardening.conf'), 'PasswordAuthentication no\n');
      writeFileSync(
        join(etc, 'ssh', 'sshd_config'),
        'Include /etc/ssh/sshd_config.d/*.conf\nPort 2222\nPasswordAuthentication yes\nMatch User bob\n  PermitRootLogin yes\n',
      );
      const items = await collectSecurityItems(
        { proc: '/nonexistent', sys: '/nonexistent', etc, var: '/nonexistent' },
        [
          { username: 'root', uid: 0, gid: 0, gecos: '', home: '/root', shell: '/bin/sh' },
          { username: 'toor', uid: 0, gid: 0, gecos: '', home: '/root', shell: '/bin/sh' },
        ],
      );
      const sshd = Object.fromEntries(items.filter((i) => i.category === 'sshd').map((i) => [i.key, i.value]));
      expect(sshd).toMatchObject({
        Port: '2222',
        PasswordAuthentication: 'no',
        PermitRootLogin: 'prohibit-password (default)',
      });
      expect(items).toContainEqual({ category: 'accounts', key: 'uid0_accounts', value: 'root,toor' });
      expect(items).toContainEqual({ category: 'selinux', key: 'mode', value: 'disabled' });
    } finally {
      rmSync(etc, { recursive: true, force: true });
    }
  });
});
