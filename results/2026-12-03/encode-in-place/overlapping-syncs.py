# Does this disk serve overlapping fdatasyncs faster than one at a time?
# k threads, each: pwrite (O_DIRECT, 64 KiB, aligned) at its own offsets of one
# zero-filled file, then fdatasync; total syncs/s and MB/s, alternating k=1,2,4.
import os, threading, time, mmap
path='/tmp/ab/zf2'
size=512<<20
fd=os.open(path,os.O_CREAT|os.O_WRONLY|os.O_TRUNC)
z=b'\0'*(1<<20)
for i in range(size>>20): os.write(fd,z)
os.fdatasync(fd); os.close(fd)
def run(k, chunk, seconds=2.0):
    fd=os.open(path,os.O_WRONLY|os.O_DIRECT)
    pos=[0]; lock=threading.Lock(); n=[0]
    stop=time.time()+seconds
    def w():
        buf=mmap.mmap(-1,chunk); buf.write(b'7'*chunk)
        while time.time()<stop:
            with lock:
                p=pos[0]; pos[0]=(pos[0]+chunk)%size
            os.pwritev(fd,[buf],p); os.fdatasync(fd)
            with lock: n[0]+=1
    ts=[threading.Thread(target=w) for _ in range(k)]
    t=time.time()
    for x in ts: x.start()
    for x in ts: x.join()
    el=time.time()-t
    os.close(fd)
    return n[0]/el, n[0]*chunk/el/1e6
for rep in range(3):
    for k in (1,2,4):
        sps,mb=run(k,64<<10)
        print(f"rep {rep} threads {k}: {sps:.0f} syncs/s {mb:.0f} MB/s", flush=True)
os.remove(path)
