# Page-cache writes of a new file, 1 MiB at a time with write-back started
# every MiB (the log's bytes_per_sync), with and without dropping the pages
# written LAG MiB before (posix_fadvise DONTNEED), so the next writes reuse
# just-freed pages instead of pages the host has taken back.
import os, time, sys, ctypes
libc=ctypes.CDLL('libc.so.6', use_errno=True)
SFR_WRITE=2
def sfr(fd,off,n):
    r=libc.sync_file_range(fd, ctypes.c_longlong(off), ctypes.c_longlong(n), ctypes.c_uint(SFR_WRITE))
    assert r==0, ctypes.get_errno()
def run(path, total_mib, drop, lag=8):
    fd=os.open(path, os.O_CREAT|os.O_WRONLY|os.O_TRUNC)
    buf=b'7'*(1<<20)
    t=time.time()
    for i in range(total_mib):
        os.write(fd, buf)
        sfr(fd, i<<20, 1<<20)
        if drop and i>=lag:
            os.posix_fadvise(fd, (i-lag)<<20, 1<<20, os.POSIX_FADV_DONTNEED)
    el=time.time()-t
    os.fsync(fd); os.close(fd); os.remove(path)
    return total_mib/el
for rep in range(3):
    for drop in (False, True):
        mbs=run('/tmp/ab/fresh.dat', 1024, drop)
        print(f"rep {rep} drop={drop}: {mbs:.0f} MiB/s", flush=True)
        time.sleep(3)
